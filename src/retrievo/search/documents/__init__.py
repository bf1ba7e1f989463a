"""Documents: ``search_library``'s documents by revision, and passages like a given one."""
