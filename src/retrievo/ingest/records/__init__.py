"""Typed models (ArchiMate, generic JSON graphs) as records: readers so far (issue 11, in progress)."""
