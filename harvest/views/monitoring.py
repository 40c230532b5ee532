"""The engineer monitoring page (Operations): what runs, the health of the workers, queues and storage,
and what failed in the last day with a plain explanation of each failure (harvest.monitoring).

The page polls itself with htmx every POLL_SECONDS: a request with the ``HX-Request`` header gets
the live part only. Asking the broker takes at most a few seconds (short timeouts), and a broker
that cannot be reached is shown as such.
"""

from django.urls import path
from django.views.generic import TemplateView

from harvest import hooks, monitoring
from harvest.models import Job
from harvest.views.jobs import RunningJobsView, url_bar
from webarchive.permissions import VIEW, Area
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
        running = list(RunningJobsView.queryset[:RUNNING_SHOWN])
        for job in running:
            job.url_bar = url_bar(job.urls_done, job.urls_queued)
        health = monitoring.worker_health()
        queues = monitoring.queue_lengths()
        monitoring.consumers_by_queue(queues, health)
        context.update(
            {
                "running": running,
                "running_count": RunningJobsView.queryset.count(),
                "health": health,
                "queues": queues,
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
