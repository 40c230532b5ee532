"""Placeholder: filled by the pages work."""

urlpatterns = []
