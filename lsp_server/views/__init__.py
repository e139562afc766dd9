"""What the record looks like to people: the projections of the record, the reports,
the Markdown rendering and the template loader."""
