"""The Experience-Transfer task of the HDR paper: seeded episodes and test scenes from a rule table."""

from .generate import LEVELS, Episode, ExperienceTransferLevel, Scene, make_level
from .render import CANVAS, PlacedObject
from .rule_sources import load_rules
from .rules import OracleRule, RuleTable, RuleTableError

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
