"""The planning side (NetarchiveSuite's data model): what is harvested, how, when, and the jobs."""

from harvest.models.additions import NextRunAddition
from harvest.models.definitions import (
    BudgetMapping,
    CollectionMapping,
    GlobalCrawlerTrapList,
    HarvestChannel,
    HarvestDefinition,
    TransferReport,
)
from harvest.models.discovery import (
    DiscoveredLink,
    DiscoveredSite,
    DiscoveryAction,
    DiscoveryBlock,
    DiscoveryDecision,
    DiscoveryFold,
)
from harvest.models.domains import UNLIMITED, Domain, DomainConfiguration, SeedList
from harvest.models.jobs import ExternalLink, HarvestInfo, HarvestRun, Job, JobConfiguration
from harvest.models.monitoring import BrokerSnapshot
from harvest.models.news import NewsArticle
from harvest.models.preload import (
    PreloadDomain,
    PreloadEntry,
    PreloadInvalidLine,
    PreloadRun,
    PreloadSource,
    PreloadStep,
)
from harvest.models.schedules import Schedule
from harvest.models.statistics import Dimension, JobStatistics, PeriodStatistics, StatisticLine
from harvest.models.templates import HarvestTemplate

__all__ = [
    "UNLIMITED",
    "BrokerSnapshot",
    "BudgetMapping",
    "CollectionMapping",
    "Dimension",
    "DiscoveredLink",
    "DiscoveredSite",
    "DiscoveryAction",
    "DiscoveryBlock",
    "DiscoveryDecision",
    "DiscoveryFold",
    "Domain",
    "DomainConfiguration",
    "ExternalLink",
    "GlobalCrawlerTrapList",
    "HarvestChannel",
    "HarvestDefinition",
    "HarvestInfo",
    "HarvestRun",
    "HarvestTemplate",
    "Job",
    "JobConfiguration",
    "JobStatistics",
    "NewsArticle",
    "NextRunAddition",
    "PeriodStatistics",
    "PreloadDomain",
    "PreloadEntry",
    "PreloadInvalidLine",
    "PreloadRun",
    "PreloadSource",
    "PreloadStep",
    "Schedule",
    "SeedList",
    "StatisticLine",
    "TransferReport",
]
