"""Models arrive with the issues that build this app (see DESIGN.md)."""
