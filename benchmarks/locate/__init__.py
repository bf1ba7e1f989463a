"""Training data for a learned "issue text -> file to edit" ranker (issue #59)."""
