"""The book's presentation: never imported by the library."""
