"""Pages of the planning side (Planning and Operations areas).

Each module holds one group of pages and its URL patterns: harvest definitions,
schedules and channels, the mappings from selection and the transfer, jobs.
"""

from harvest.views import definitions, discovery, jobs, mappings, monitoring, schedules, steering

urlpatterns = [
    *definitions.urlpatterns,
    *schedules.urlpatterns,
    *mappings.urlpatterns,
    *jobs.urlpatterns,
    *steering.urlpatterns,
    *monitoring.urlpatterns,
    *discovery.urlpatterns,
]
