"""Record pages: list, detail, the two-stage proposal, edit, status, transfer."""

from django.contrib import messages
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from selection import hooks, services
from selection.choices import CheckStatus
from selection.filtersets import RecordFilterSet
from selection.forms import RecordForm, RecordStatusForm, RecordTransferForm, SavedSearchForm, UrlEntryForm
from selection.models import Record
from selection.selectors import budget_ranges, compatibility_matrix, record_duplicates
from selection.tables import RecordTable
from selection.urlcheck import UrlCheckResult, check_url
from webarchive.permissions import ADD, CHANGE, VALIDATE, Area, can, permitted, restrict
from webarchive.urlnorm import InvalidURL, normalise_url
from webarchive.views import (
    ObjectDetailView,
    ObjectListView,
    PermittedActionsMixin,
    ServiceFormView,
    safe_next_url,
)

CHECK_TOKEN_MAX_AGE = 30 * 60  # a check shown to the librarian is reused for half an hour
CHECK_TOKEN_SALT = "selection.url-check"  # noqa: S105 (a signing salt, not a secret)


def sign_check(result: UrlCheckResult) -> str:
    return signing.dumps(result.as_dict(), salt=CHECK_TOKEN_SALT)


def load_check(token: str) -> UrlCheckResult | None:
    """The check signed at stage 1, if the token is genuine and recent."""
    try:
        return UrlCheckResult.from_dict(
            signing.loads(token, salt=CHECK_TOKEN_SALT, max_age=CHECK_TOKEN_MAX_AGE)
        )
    except (signing.BadSignature, TypeError, ValueError):
        return None


def may_override_check(user, *, selectable: bool) -> bool:
    """Whether a record's form offers to keep a URL that failed its check (with a reason): to those
    who validate records (curators), and only when the check did fail."""
    return not selectable and permitted(user, Record, [VALIDATE])[VALIDATE]


def checker_from_token(token: str):
    """A checker that reuses the check shown at stage 1 (signed by the server), else checks again."""
    stored = load_check(token)

    def checker(url):
        return stored if stored is not None and stored.url == url else check_url(url)

    return checker


class RecordListView(PermittedActionsMixin, ObjectListView):
    area = Area.SELECTION
    queryset = Record.objects.select_related("collection", "responsible", "theme")
    filterset_class = RecordFilterSet
    template_name = "selection/record_list.html"
    table_class = RecordTable
    actions = (ADD, CHANGE)  # propose and import; bulk edit

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        query = self.request.GET.copy()
        query.pop("page", None)
        context.update(
            {
                "query": query.urlencode(),
                "saved_search_form": SavedSearchForm(initial={"query": query.urlencode()}),
                "saved_searches": self.request.user.saved_searches.all(),
            }
        )
        return context


class RecordDetailView(PermittedActionsMixin, ObjectDetailView):
    area = Area.SELECTION
    actions = (CHANGE, VALIDATE)  # edit and transfer (in the user's collections); set the status
    queryset = Record.objects.select_related(
        "collection", "responsible", "theme", "created_by", "modified_by", "status_changed_by"
    ).prefetch_related("keywords")
    template_name = "selection/record_detail.html"
    fields = [
        "collection",
        "responsible",
        "budget",
        "frequency",
        "depth",
        "needs_browser",
        "theme",
        "content_notes",
        "technical_notes",
        "is_active",
        "status",
        "status_reason",
        "check_status",
        "check_override_reason",
        "created_at",
        "created_by",
        "modified_at",
        "modified_by",
    ]

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        record = self.object
        user = self.request.user
        context.update(
            {
                "check": UrlCheckResult.from_dict(record.check_result) if record.check_result else None,
                "duplicates": record_duplicates(record.url, exclude_pk=record.pk),
                "status_form": RecordStatusForm(initial={"version": record.version}),
                "budget_ranges": budget_ranges(),
                # What became of the record once harvested: provided by the apps above (storage).
                "panels": hooks.record_panels.collect(record=record, user=user),
            }
        )
        return context


class RecordProposeView(PermittedActionsMixin, ServiceFormView):
    """Two stages: the URL is checked online and against the database, then the record is filled in."""

    area = Area.SELECTION
    model = Record
    actions = (VALIDATE,)  # a curator may select a URL that failed its check
    model_permission = (ADD, Record)
    permission_denied_message = gettext_lazy("Your role does not allow you to propose URLs.")
    template_name = "selection/record_propose.html"

    def get_form(self, form_class=None):
        data = self.request.POST if self.request.method == "POST" else None
        initial = {"collection": self.request.GET.get("collection"), "url": self.request.GET.get("url", "")}
        self.entry_form = UrlEntryForm(data, user=self.request.user, initial=initial, prefix="entry")
        self.stage = 1
        self.check = None
        self.collection = None
        if data is None or not self.entry_form.is_valid():
            return None
        self.collection = self.entry_form.cleaned_data["collection"]
        try:
            url = normalise_url(self.entry_form.cleaned_data["url"])
        except InvalidURL as error:
            self.entry_form.add_error("url", str(error))
            return None
        stage2 = "record-url" in data
        if not stage2:
            self.check = check_url(url)
            initial = {
                "url": url,
                "responsible": self.request.user.pk,
                "budget": self.collection.default_budget,
                "frequency": self.collection.default_frequency,
                "depth": self.collection.default_depth,
                "needs_browser": False,
                "is_active": True,
                "check_token": sign_check(self.check),
            }
            self.stage = 2
            return RecordForm(
                collection=self.collection,
                initial=initial,
                prefix="record",
                budget_ranges=budget_ranges(),
                allow_override=self.may_override(),
            )
        self.stage = 2
        self.check = load_check(data.get("record-check_token", ""))
        return RecordForm(
            data,
            collection=self.collection,
            prefix="record",
            budget_ranges=budget_ranges(),
            allow_override=self.may_override(),
        )

    def may_override(self) -> bool:
        selectable = self.check is not None and self.check.selectable
        return may_override_check(self.request.user, selectable=selectable)

    def post(self, request, *args, **kwargs):
        form = self.get_form()
        if form is None or not form.is_bound:
            return self.render_to_response(self.get_context_data(form=form))
        if form.is_valid():
            return self.form_valid(form)
        return self.form_invalid(form)

    def perform(self, form):
        data = form.cleaned_data
        record = services.record_propose(
            user=self.request.user,
            collection=self.collection,
            url=data["url"],
            theme=data["theme"],
            budget=data["budget"],
            frequency=data["frequency"],
            depth=data["depth"],
            needs_browser=data["needs_browser"],
            responsible=data["responsible"],
            keywords=data["keywords"],
            supplementary_urls=data["supplementary_urls"],
            content_notes=data["content_notes"],
            technical_notes=data["technical_notes"],
            is_active=data["is_active"],
            check_override_reason=data.get("check_override_reason", ""),
            checker=checker_from_token(data["check_token"]),
        )
        messages.success(self.request, _("The record for %(url)s was saved.") % {"url": record.url})
        return record

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        form = context.get("form")
        url = None
        if form is not None:
            url = (form.data.get("record-url") if form.is_bound else form.initial.get("url")) or None
        duplicates = None
        if url:
            try:
                url = normalise_url(url)
                duplicates = record_duplicates(url)
            except InvalidURL:
                duplicates = None
        check = self.check
        final_url = check.final_url if check and check.status == CheckStatus.REDIRECT else ""
        context.update(
            {
                "title": _("Propose a URL"),
                "entry_form": self.entry_form,
                "stage": self.stage,
                "check": check,
                # offered only when it leads somewhere else than the URL being proposed
                "final_url": final_url if final_url and final_url != url else "",
                "collection": self.collection,
                "duplicates": duplicates,
                "duplicates_here": duplicates.in_collection(self.collection) if duplicates else [],
                "matrix": compatibility_matrix(),
            }
        )
        return context


class RecordObjectMixin:
    """Finds the record in the URL among those the user may change."""

    action = CHANGE

    def get_record(self) -> Record:
        if not hasattr(self, "record"):
            records = Record.objects.select_related("collection", "theme")
            if not can(self.request.user, self.action, Record):
                raise PermissionDenied(_("Your role does not allow this."))
            self.record = get_object_or_404(records, pk=self.kwargs["pk"])
            if not restrict(records.filter(pk=self.record.pk), self.request.user, self.action).exists():
                raise PermissionDenied(
                    _("You are not a member of the collection “%(c)s”.") % {"c": self.record.collection}
                )
        return self.record

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["record"] = self.get_record()
        return context


class RecordEditView(RecordObjectMixin, ServiceFormView):
    area = Area.SELECTION
    template_name = "selection/record_edit.html"

    def get_form(self, form_class=None):
        record = self.get_record()
        data = self.request.POST if self.request.method == "POST" else None
        initial = {
            "url": record.url,
            "supplementary_urls": record.supplementary_urls,
            "responsible": record.responsible_id,
            "budget": record.budget,
            "frequency": record.frequency,
            "depth": record.depth,
            "needs_browser": record.needs_browser,
            "theme": record.theme_id,
            "keywords": "; ".join(k.name for k in record.keywords.all()),
            "content_notes": record.content_notes,
            "technical_notes": record.technical_notes,
            "is_active": record.is_active,
            "check_override_reason": record.check_override_reason,
            "version": record.version,
        }
        return RecordForm(
            data,
            collection=record.collection,
            initial=initial,
            budget_ranges=budget_ranges(),
            allow_override=may_override_check(
                self.request.user, selectable=record.check_status in CheckStatus.selectable()
            ),
        )

    def perform(self, form):
        data = dict(form.cleaned_data)
        version = data.pop("version") or 0
        data.pop("check_token", None)
        record = services.record_update(
            record=self.get_record(), user=self.request.user, expected_version=version, **data
        )
        messages.success(self.request, _("The record was saved."))
        return record

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update({"title": _("Edit the record"), "matrix": compatibility_matrix()})
        return context


class RecordStatusView(RecordObjectMixin, ServiceFormView):
    """Validate, reject or send back a record (curators)."""

    area = Area.SELECTION
    action = VALIDATE
    form_class = RecordStatusForm
    title = gettext_lazy("Change the status")

    def get_record(self):
        if not can(self.request.user, VALIDATE, Record):
            raise PermissionDenied(_("Only curators may validate or reject records."))
        return get_object_or_404(Record, pk=self.kwargs["pk"])

    def perform(self, form):
        record = services.record_set_status(
            record=self.get_record(),
            user=self.request.user,
            status=form.cleaned_data["status"],
            reason=form.cleaned_data["reason"],
            expected_version=form.cleaned_data["version"],
        )
        messages.success(self.request, _("The record is now “%(s)s”.") % {"s": record.get_status_display()})
        return safe_next_url(self.request, record)


class RecordTransferView(RecordObjectMixin, ServiceFormView):
    area = Area.SELECTION
    title = gettext_lazy("Transfer to another collection")
    submit_label = gettext_lazy("Transfer")

    def get_form(self, form_class=None):
        data = self.request.POST if self.request.method == "POST" else None
        return RecordTransferForm(
            data, user=self.request.user, initial={"version": self.get_record().version}
        )

    def perform(self, form):
        record = services.record_transfer(
            record=self.get_record(),
            user=self.request.user,
            collection=form.cleaned_data["collection"],
            theme=form.cleaned_data["theme"],
            expected_version=form.cleaned_data["version"],
        )
        messages.success(self.request, _("The record is now in “%(c)s”.") % {"c": record.collection})
        return record
