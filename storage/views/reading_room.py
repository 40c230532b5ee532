"""The readers' entry page (to be written)."""

urlpatterns = []
