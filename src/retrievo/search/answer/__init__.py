"""The answer: relevance and answerability, calibration, the dense arm's coverage, highlighting."""
