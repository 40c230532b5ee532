"""The crawl engineer's storage path, in a real browser: find Storage under Operations, add a node
through the form, see its capacity bar, mark it offline and see its state."""

import re

import pytest

from storage.models import StorageEvent, StorageNode
from tests.browser.test_navigation import foreign_requests, log_in
from tests.factories import PASSWORD, UserFactory
from webarchive.permissions import Role

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser


def test_an_engineer_adds_a_node_and_marks_it_offline(page, live_server, requested_urls, tmp_path):
    UserFactory(username="engineer", roles=[Role.ENGINEER])
    root = tmp_path / "disks" / "vault-1"

    page.goto("/login/")
    log_in(page, "engineer", PASSWORD)
    page.goto("/operations/")
    page.get_by_role("link", name="Storage", exact=True).first.click()
    expect(page.locator("h1")).to_contain_text("Storage nodes")

    page.locator("#node-add").click()
    page.get_by_label("Name").fill("vault-1")
    page.get_by_label("Location").fill("basement")
    page.get_by_label("Root directory").fill("relative/path")
    page.get_by_role("button", name="Add").click()
    expect(page.locator("#field-root .invalid-feedback")).to_contain_text("Give an absolute path.")
    assert not StorageNode.objects.exists()

    page.get_by_label("Root directory").fill(str(root))
    page.get_by_role("button", name="Add").click()
    expect(page.locator(".alert-success")).to_contain_text("Storage node vault-1 was added.")
    expect(page.locator("#node-state")).to_contain_text("online")
    bar = page.locator("#node-capacity .progress-bar")
    expect(bar).to_be_visible()
    expect(bar).to_have_class(re.compile(r"\bw-pct-\d+\b"))  # a class, not style="" (the CSP)
    expect(page.locator("#node-capacity")).to_contain_text(re.compile(r"used of .+B, .+B free"))

    page.locator("#storage-tabs").get_by_role("link", name="Nodes").click()
    row = page.locator("#node-vault-1")
    expect(row.locator(".progress-bar")).to_be_visible()
    expect(row).to_contain_text("basement")
    row.get_by_role("link", name="vault-1").click()

    page.locator("#offline-reason").fill("disk replacement")
    page.locator("#node-offline").click()
    expect(page.locator(".alert-success")).to_contain_text("vault-1 is offline")
    expect(page.locator("#node-state")).to_contain_text("offline")
    expect(page.locator("#node-online")).to_be_visible()
    expect(page.locator("#node-events")).to_contain_text("disk replacement")

    node = StorageNode.objects.get(name="vault-1")
    assert node.state == StorageNode.State.OFFLINE and node.root == str(root)
    offline = StorageEvent.objects.get(kind=StorageEvent.Kind.NODE_OFFLINE)
    assert offline.user.username == "engineer" and "disk replacement" in offline.detail
    assert foreign_requests(requested_urls, live_server.url) == []
