"""Pages of the planning side: each views module lists its own URL patterns."""

from harvest.views import domains, planning

app_name = "harvest"

urlpatterns = [*domains.urlpatterns, *planning.urlpatterns]
