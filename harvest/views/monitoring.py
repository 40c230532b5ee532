"""The engineer monitoring page (Operations): what runs, the health of the workers, queues and storage,
and what failed in the last day with a plain explanation of each failure (harvest.monitoring).

The page polls itself with htmx every POLL_SECONDS: a request with the ``HX-Request`` header gets
the live part only. Asking the broker takes seconds, so the page never does: the beat gathers the
workers' and queues' state every MONITORING_BROKER_INTERVAL seconds (``harvest.gather_broker``), and
the page shows the last gathering with its age (and asks for a new one when it is stale). A broker
that cannot be reached is shown as such.
"""

from django.urls import path
from django.views.generic import TemplateView

from harvest import hooks, monitoring
from harvest.models import Job
from harvest.selectors import jobs_with_totals
from harvest.views.jobs import RunningJobsView, url_bar
from webarchive.permissions import VIEW, Area
from webarchive.tasks import enqueue
from webarchive.views import AreaRequiredMixin, htmx_response

POLL_SECONDS = 10
RUNNING_SHOWN = 50


class MonitoringView(AreaRequiredMixin, TemplateView):
    """One page for crawl engineers: running jobs, workers and queues, storage alerts, recent failures."""

    area = Area.OPERATIONS
    model_permission = (VIEW, Job)
    template_name = "harvest/monitoring.html"

    def get_template_names(self):
        return ["harvest/monitoring_live.html" if self.request.htmx else self.template_name]

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        running = jobs_with_totals(RunningJobsView.queryset[:RUNNING_SHOWN])
        for job in running:
            job.url_bar = url_bar(job.urls_done, job.urls_queued)
        broker = monitoring.broker_view()
        if broker.stale:  # never gathered, or the beat is not running: ask for one, without waiting
            enqueue("harvest.gather_broker")
        context.update(
            {
                "running": running,
                "running_count": RunningJobsView.queryset.count(),
                "broker": broker,
                "health": broker.health,
                "queues": broker.queues,
                "failures": monitoring.recent_failures(),
                # What the apps above add to the page (storage: its alerts).
                "panels": hooks.monitoring_panels.collect(),
                "poll_seconds": POLL_SECONDS,
            }
        )
        return context

    def render_to_response(self, context, **kwargs):
        return htmx_response(self.request, super().render_to_response(context, **kwargs))


urlpatterns = [
    path("monitoring/", MonitoringView.as_view(), name="monitoring"),
]
