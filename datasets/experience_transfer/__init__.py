"""The Experience-Transfer task of the HDR paper: seeded episodes and test scenes from a rule table."""

from typing import TYPE_CHECKING

from memreason.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (memreason.lazy): numpy and PIL come with some
    from .generate import LEVELS, Episode, ExperienceTransferLevel, Scene, make_level
    from .render import CANVAS, PlacedObject
    from .rule_sources import load_rules
    from .rules import OracleRule, RuleTable, RuleTableError

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".generate": "LEVELS Episode ExperienceTransferLevel Scene make_level",
        ".render": "CANVAS PlacedObject",
        ".rule_sources": "load_rules",
        ".rules": "OracleRule RuleTable RuleTableError",
    },
)

__all__ = [
    "CANVAS",
    "LEVELS",
    "Episode",
    "ExperienceTransferLevel",
    "OracleRule",
    "PlacedObject",
    "RuleTable",
    "RuleTableError",
    "Scene",
    "load_rules",
    "make_level",
]
