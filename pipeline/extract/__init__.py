"""The extract stage: any input file to one row per record; HTML pages to their main text."""
