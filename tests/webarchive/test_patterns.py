"""Users' regular expressions (webarchive.patterns): run by RE2 in linear time, refused with the reason
when RE2 cannot run them, bounded in length and memory; the crawler runs saved rules the same way."""

from io import StringIO

import pytest
import re2
from django.core.management import call_command

from harvest.crawler.scope import RULE_MAX_MEMORY, compile_rule
from harvest.models import Domain, GlobalCrawlerTrapList, HarvestDefinition, HarvestTemplate
from webarchive.patterns import MAX_LENGTH, MAX_MEMORY, PatternError, compile_user_pattern


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        (r"(.+)+!", "http://example.com/" + "a" * 100, False),
        (r"(a+)+$", "a" * 100 + "!", False),
        (r"(\S+)+!", "2026-03-01T12:00:00.000Z 200 100 http://alpha.fr/" + "x" * 100 + " L", False),
        (r"(a|aa)+b", "a" * 100, False),
        (r"(.*a){30}x", "a" * 100, False),
        (r"(.*a){30}", "a" * 100, True),
        (r"(?i)\.PDF$", "http://example.com/report.pdf", True),
        (r"(?P<year>\d{4})/\d\d/", "http://example.com/2031/05/", True),
    ],
)
def test_patterns_run_in_linear_time(pattern, text, found):
    assert (compile_user_pattern(pattern).search(text) is not None) is found


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"(\w)\1", "“(\\w)\\1” cannot be used: back-references (\\1, (?P=name)) are not supported: "),
        (r"(?P<x>a)(?P=x)", "back-references (\\1, (?P=name)) are not supported"),
        (r"a(?=b)", "look-ahead and look-behind ((?=…), (?!…), (?<=…), (?<!…)) are not supported: "),
        (r"a(?!b)", "look-ahead and look-behind"),
        (r"(?<=a)b", "look-ahead and look-behind"),
        (r"(?<!a)b", "look-ahead and look-behind"),
        (r"(?>a+)b", "atomic groups and possessive quantifiers"),
        (r"a++b", "atomic groups and possessive quantifiers"),
        (r"(a)?(?(1)b|c)", "conditional groups"),
        (r"\.html\Z", "RE2 regular expressions write the end of the text \\z, not \\Z."),
        (r"a{1001}", "too large for RE2"),
        (r"\pL{1000}", "too large for RE2"),
        ("(unclosed", "“(unclosed” is not a valid regular expression: missing ): (unclosed."),
        ("*bad", "“*bad” is not a valid regular expression: no argument for repetition operator: *."),
    ],
)
def test_what_re2_cannot_run_is_refused_saying_why(pattern, message):
    with pytest.raises(PatternError) as error:
        compile_user_pattern(pattern)
    assert isinstance(error.value, ValueError)
    assert message in str(error.value)


def test_unsupported_features_are_explained_by_linear_time():
    with pytest.raises(PatternError) as error:
        compile_user_pattern(r"(a)\1")
    assert "patterns are RE2 regular expressions, which run in time proportional to the text" in str(
        error.value
    )


def test_patterns_are_bounded_in_length_and_memory():
    compile_user_pattern("a" * MAX_LENGTH)
    with pytest.raises(PatternError, match="too long: 1001 characters, at most 1000"):
        compile_user_pattern("a" * (MAX_LENGTH + 1))
    compiled = compile_user_pattern(r"\d+")
    assert compiled.options.max_mem == MAX_MEMORY
    assert compiled.options.never_capture  # only whether it matches is asked


def test_users_patterns_stay_out_of_re2s_process_wide_cache():
    compiled = compile_user_pattern(r"user-pattern-\d+")
    assert compiled is not compile_user_pattern(r"user-pattern-\d+")


def test_the_crawler_runs_saved_rules_with_the_same_bounds():
    assert RULE_MAX_MEMORY == MAX_MEMORY
    rule = compile_rule(r"/calendar/\d{4}/")
    assert rule.options.max_mem == MAX_MEMORY and rule.search("http://example.fr/calendar/2031/")
    with pytest.raises(re2.error):
        compile_rule(r"(a)\1")


@pytest.mark.django_db
def test_every_rule_the_demo_saves_runs_under_re2():
    call_command("demo", stdout=StringIO())
    patterns = [pattern for traps in GlobalCrawlerTrapList.objects.all() for pattern in traps.trap_list]
    patterns += [pattern for domain in Domain.objects.all() for pattern in domain.trap_list]
    patterns += [pattern for entry in HarvestDefinition.objects.all() for pattern in entry.trap_list]
    for template in HarvestTemplate.objects.all():
        settings = template.crawler_settings()
        patterns += settings["accept_rules"] + settings["reject_rules"]
    assert patterns  # the demo's calendar traps at least
    for pattern in patterns:
        compile_user_pattern(pattern)
        compile_rule(pattern)
