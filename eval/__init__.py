"""Metrics, the evaluation harness and its CLI (``python -m eval ...``)."""

import os

# LiteLLM downloads a price map at import unless told to use its bundled copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
