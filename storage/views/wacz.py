"""A job's WACZ package for crawl engineers: asked for from the job's page, made by a worker, downloaded."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import FileResponse, HttpResponseNotFound
from django.shortcuts import get_object_or_404, redirect
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import View

from harvest.models import Job
from storage.models import WarcFile
from storage.services.wacz import job_wacz_path, job_wacz_request
from webarchive.permissions import DOWNLOAD, Area
from webarchive.views import AreaRequiredMixin


class JobWaczView(AreaRequiredMixin, View):
    """GET: the job's package once made (404 before); POST: have a worker make it."""

    area = Area.OPERATIONS
    model_permission = (DOWNLOAD, WarcFile)  # the bytes of WARC files: crawl engineers'
    permission_denied_message = gettext_lazy("Only crawl engineers may download the WARC files of jobs.")

    def get(self, request, pk):
        job = get_object_or_404(Job, pk=pk)
        target = job_wacz_path(job.pk)
        try:
            stream = target.open("rb")
        except FileNotFoundError:
            message = _("The WACZ package of job %(id)s has not been made yet.") % {"id": job.pk}
            return HttpResponseNotFound(message, content_type="text/plain; charset=utf-8")
        return FileResponse(
            stream, as_attachment=True, filename=target.name, content_type="application/wacz+zip"
        )

    def post(self, request, pk):
        job = get_object_or_404(Job, pk=pk)
        try:
            sent = job_wacz_request(job_id=job.pk)
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
        else:
            if sent:
                messages.success(
                    request,
                    _(
                        "The WACZ package of job %(id)s is being made: its download link appears on this "
                        "page when it is ready."
                    )
                    % {"id": job.pk},
                )
            else:
                messages.info(request, _("The WACZ package of job %(id)s is ready.") % {"id": job.pk})
        return redirect(job.get_absolute_url())


urlpatterns = [
    path("jobs/<int:pk>/wacz/", JobWaczView.as_view(), name="job_wacz"),
]
