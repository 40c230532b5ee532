"""The REST API (project wiring): one router for every app's viewsets."""

from django.urls import path, re_path
from rest_framework.routers import DefaultRouter

from harvest.api import jobs as harvest_jobs
from harvest.api import views as harvest
from harvest.api.feed import CrawlFeedView
from harvest.api.statistics import StatisticsViewSet
from harvest.api.w3act import W3actCrawlFeedView
from selection.api.views import CollectionViewSet, CompatibilityRuleViewSet, RecordViewSet, ThemeViewSet
from storage.api.index import CaptureLinesView
from storage.api.search import SearchView
from storage.api.views import JobWarcFilesView, StorageNodeViewSet, WarcFileViewSet
from webarchive.api.views import NotFoundView, ObtainTokenView

app_name = "api"

router = DefaultRouter()
router.register("collections", CollectionViewSet)
router.register("records", RecordViewSet)
router.register("themes", ThemeViewSet)
router.register("compatibility-rules", CompatibilityRuleViewSet)
router.register("domains", harvest.DomainViewSet)
router.register("seed-lists", harvest.SeedListViewSet)
router.register("configurations", harvest.ConfigurationViewSet)
router.register("templates", harvest.TemplateViewSet)
router.register("schedules", harvest.ScheduleViewSet)
router.register("channels", harvest.ChannelViewSet)
router.register("harvest-definitions", harvest.HarvestDefinitionViewSet)
router.register("crawler-traps", harvest.TrapListViewSet)
router.register("collection-mappings", harvest.CollectionMappingViewSet)
router.register("budget-mappings", harvest.BudgetMappingViewSet)
router.register("transfers", harvest.TransferViewSet)
router.register("jobs", harvest_jobs.JobViewSet)
router.register("harvest-infos", harvest_jobs.HarvestInfoViewSet)
router.register("warc-files", WarcFileViewSet)
router.register("storage-nodes", StorageNodeViewSet)
router.register("statistics", StatisticsViewSet)

urlpatterns = [
    path("auth/token/", ObtainTokenView.as_view(), name="token"),
    # A job's files are storage's (the job viewset is harvest's, which storage sits on).
    path("jobs/<int:pk>/files/", JobWarcFilesView.as_view(), name="job-files"),
    *router.urls,
    path("crawl-feed/", CrawlFeedView.as_view(), name="crawl-feed"),
    # W3ACT's path after its base (/api/crawl/feed), for its launchers.
    path("crawl-feed/w3act/ld/<str:frequency>/", W3actCrawlFeedView.as_view(), name="crawl-feed-w3act"),
    path("search/", SearchView.as_view(), name="search"),
    # Outside crawlers' index lines (the OutbackCDX role); reading the index is /cdx.
    path("cdx/", CaptureLinesView.as_view(), name="cdx-lines"),
    # Last: what no route matched. Ending in a slash, so that Django still adds a missing one.
    re_path(r"^.*/$", NotFoundView.as_view()),
]
