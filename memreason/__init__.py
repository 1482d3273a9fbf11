"""memreason: memory-for-reasoning programs in DSPy (HDR and ArcMemo), with their benchmarks, metrics and tuning.

One package; the repository's top-level folders are its subpackages:

    memreason.signatures   typed dspy.Signature classes and pydantic types   (signatures/)
    memreason.programs     dspy.Module components, programs, memory stores   (programs/)
    memreason.datasets     Experience-Transfer generator, ARC-AGI loading     (datasets/)
    memreason.eval         metrics, evaluation harness, CLI                   (eval/)
    memreason.optimize     Optuna studies and DSPy compilation                (optimize/)
    memreason.lm           the LM layer: embedded llama-server, fault guards, token meter (memreason/lm/)
    memreason.sandbox      isolated processes for generated programs, no DSPy (memreason/sandbox/)

Importing this package is cheap: it imports none of its subpackages.
"""

import os

# LiteLLM downloads a price map at import unless told to use its bundled copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

__version__ = "0.2.0"
