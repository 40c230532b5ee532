"""The curators' pages of access rules and exclusions (to be written)."""

urlpatterns = []
