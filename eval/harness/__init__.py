"""What every run shares, whatever its task: typed options, LM resolution, sessions, the parallel loop, run
directories (config, examples, results), resuming, traces of LM calls, token usage, MLflow tracking."""

from typing import TYPE_CHECKING

from memreason.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (memreason.lazy): the LM layer, and DSPy, come with some
    from .errors import UsageError
    from .lms import resolve_lms, retry_policy
    from .options import LMOptions, Options, RunOptions
    from .resume import RunDirError, read_examples
    from .runs import RunConfig, comparable, new_run_dir, use_response_cache, write_json

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".errors": "UsageError",
        ".lms": "resolve_lms retry_policy",
        ".options": "LMOptions Options RunOptions",
        ".resume": "RunDirError read_examples",
        ".runs": "RunConfig comparable new_run_dir use_response_cache write_json",
    },
)

__all__ = [
    "LMOptions",
    "Options",
    "RunConfig",
    "RunDirError",
    "RunOptions",
    "UsageError",
    "comparable",
    "new_run_dir",
    "read_examples",
    "resolve_lms",
    "retry_policy",
    "use_response_cache",
    "write_json",
]
