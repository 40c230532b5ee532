"""A harvest template's "streamed video" setting: every variant of an HLS or DASH stream, or only the
best; saved by the template form and the API, frozen into a job, given to the crawler."""

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from harvest.choices import StreamVariants
from harvest.crawler import defaults
from harvest.crawler.extractors.streams import STREAM_VARIANTS
from harvest.models import HarvestRun, HarvestTemplate
from harvest.services.domains import configuration_save
from harvest.services.launcher import jobs_generate
from harvest.services.planning import definition_configurations_change
from harvest.worker import site_settings
from tests.factories import UserFactory
from tests.harvest.test_api import detail, patch
from tests.harvest.test_pages_domains import page_text, template_data
from webarchive.permissions import Role
from webarchive.testsite import TestSite, streams

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_curator(client):
    client.force_login(UserFactory(username="clara", roles=[Role.CURATOR]))
    return client


def frozen_job(template, make_domain, selective):
    domain = make_domain("streams.fr")
    configuration_save(configuration=domain.default_configuration, template=template)
    definition_configurations_change(definition=selective, add=[domain.default_configuration])
    run = HarvestRun.objects.create(harvest_definition=selective, number=1, scheduled_for=timezone.now())
    [job] = jobs_generate(definition=selective, run=run)
    return job


def test_best_variant_is_saved_by_the_form_shown_frozen_into_a_job_and_given_to_the_crawler(
    as_curator, make_domain, selective
):
    response = as_curator.post(
        reverse("harvest:template_create"), template_data(stream_variants="best"), follow=True
    )
    template = HarvestTemplate.objects.get(name="news-sites")
    assert template.stream_variants == "best"
    rows = dict(dict(response.context["groups"])["Extractors"])
    assert rows["streamed video"] == "Only the best variant (the highest bandwidth)"
    form_page = page_text(as_curator.get(reverse("harvest:template_edit", args=[template.pk])))
    assert "Which variants of an HLS or DASH stream are archived" in form_page

    job = frozen_job(template, make_domain, selective)
    assert job.template_settings["stream_variants"] == "best"
    template.stream_variants = "all"  # the template edited after: the job keeps what it froze
    template.save()
    job.refresh_from_db()
    assert site_settings(job.configurations.get(), job).stream_variants == "best"


def test_a_job_frozen_before_the_setting_existed_fetches_every_variant(template, make_domain, selective):
    job = frozen_job(template, make_domain, selective)
    job.template_settings.pop("stream_variants")
    assert site_settings(job.configurations.get(), job).stream_variants == defaults.STREAM_VARIANTS == "all"


def test_an_unknown_choice_is_refused_by_the_form_and_nothing_is_saved(as_curator):
    response = as_curator.post(reverse("harvest:template_create"), template_data(stream_variants="some"))
    assert response.status_code == 200
    assert response.context["form"].errors == {
        "stream_variants": ["Select a valid choice. some is not one of the available choices."]
    }
    assert not HarvestTemplate.objects.filter(name="news-sites").exists()


def test_the_api_writes_the_setting_and_refuses_an_unknown_choice_changing_nothing(as_curator, template):
    assert as_curator.get(detail("harvesttemplate", template)).json()["stream_variants"] == "all"
    response = patch(as_curator, detail("harvesttemplate", template), {"stream_variants": "best"})
    assert response.status_code == 200, response.json()
    template.refresh_from_db()
    assert (template.stream_variants, template.version) == ("best", 2)

    before = HarvestTemplate.objects.filter(pk=template.pk).values().get()
    response = patch(as_curator, detail("harvesttemplate", template), {"stream_variants": "worst"})
    assert response.status_code == 400
    assert response.json() == {"stream_variants": ['"worst" is not a valid choice.']}
    assert HarvestTemplate.objects.filter(pk=template.pk).values().get() == before


def test_the_crawler_knows_the_same_choices_as_the_template():
    assert tuple(StreamVariants.values) == STREAM_VARIANTS == ("all", "best")


def test_an_ad_hoc_crawl_takes_the_setting_and_refuses_an_unknown_choice(tmp_path, capsys, settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    with TestSite(port=0, seed=1, pages=5, hosts=1) as site:
        call_command(
            "crawl", site.url("/streams/"), "--warc-dir", str(tmp_path), "--delay", "0", "--quiet",
            "--stream-variants", "best",
        )  # fmt: skip
        best, every = (streams.ground_truth(site, variants=value) for value in ("best", "all"))
    fetched = {line.split(" ")[3] for line in (tmp_path / "crawl.log").read_text().splitlines()}
    assert best <= fetched
    assert not (every - best) & fetched
    assert any("/streams/cdn/dash/" in url for url in best)  # the CDN's files, on the site's own host
    with pytest.raises(CommandError, match="invalid choice: 'worst'"):
        call_command("crawl", "http://example.com/", "--stream-variants", "worst")
