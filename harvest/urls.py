"""Pages of the planning side: each views module lists its own URL patterns."""

from harvest.views import domains, planning, preload, templates

app_name = "harvest"

urlpatterns = [
    *domains.urlpatterns,
    *templates.urlpatterns,
    *planning.urlpatterns,
    *preload.urlpatterns,
]
