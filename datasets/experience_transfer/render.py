"""Drawing Experience-Transfer objects onto a canvas with PIL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # PIL is imported where a canvas is drawn
    from PIL import Image

CANVAS = (200, 100)  # width, height in pixels, as in the paper


@dataclass(frozen=True)
class PlacedObject:
    """One drawn object: its attributes and its bounding box (top-left corner, side)."""

    shape: str
    color: str
    size: int
    x: int
    y: int

    def box(self) -> tuple[int, int, int, int]:
        return (self.x, self.y, self.x + self.size - 1, self.y + self.size - 1)

    def overlaps(self, other: "PlacedObject", gap: int = 2) -> bool:
        """Bounding boxes closer than ``gap`` pixels count as overlapping."""
        return not (
            self.x + self.size + gap <= other.x
            or other.x + other.size + gap <= self.x
            or self.y + self.size + gap <= other.y
            or other.y + other.size + gap <= self.y
        )

    def describe(self) -> dict:
        return {"shape": self.shape, "color": self.color, "size": self.size, "x": self.x, "y": self.y}


def draw(objects: list[PlacedObject], background: str) -> Image.Image:
    """Render ``objects`` on a fresh canvas of colour ``background``."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", CANVAS, background)
    pen = ImageDraw.Draw(image)
    for obj in objects:
        x0, y0, x1, y1 = obj.box()
        if obj.shape == "square":
            pen.rectangle((x0, y0, x1, y1), fill=obj.color)
        elif obj.shape == "circle":
            pen.ellipse((x0, y0, x1, y1), fill=obj.color)
        elif obj.shape == "triangle":
            pen.polygon([((x0 + x1) / 2, y0), (x1, y1), (x0, y1)], fill=obj.color)
        else:  # the rule table validates shapes; this guards direct callers
            raise ValueError(f"cannot draw shape {obj.shape!r}")
    return image
