"""vlbias: helpers for the Jupyter Book on social bias and perception in vision-language AI.

The package is deliberately small: a model layer (:mod:`vlbias.models`), a data layer
(:mod:`vlbias.data`), an on-disk embedding cache (:mod:`vlbias.cache`), the profiles that give
each notebook its parameters (:mod:`vlbias.profiles`), a papermill runner (:mod:`vlbias.runner`)
and small helpers for book pages (:mod:`vlbias.book`).
"""

__version__ = "0.1.0"

from .progress import apply_environment as _apply_progress_environment

_apply_progress_environment()
