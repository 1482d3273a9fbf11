"""A rule table that is not the paper's: other shapes, colours, backgrounds and labels."""

CUSTOM = {
    "name": "toy",
    "attributes": {"shape": ["triangle", "circle"], "color": ["purple", "orange"], "background": ["gray", "ivory"]},
    "labels": ["safe", "toxic", "unknown"],
    "count_label": "toxic",
    "rules": [
        {"shape": s, "color": c, "background": b, "label": "toxic" if (s == "triangle") != (b == "ivory") else "safe"}
        for s in ["triangle", "circle"]
        for c in ["purple", "orange"]
        for b in ["gray", "ivory"]
    ],
    "level3_mask": [{"shape": "circle", "color": "orange", "background": "ivory"}],
}
