"""Exceptions that every layer raises alike, each with a message that says what to do."""

from __future__ import annotations


class ModelUnavailableError(OSError):
    """A model spec whose weights are not here: not in a local directory, not in the Hugging Face
    cache, and not downloadable now (offline, unknown or gated id).

    The image-text, language and text-to-image loaders all raise it; its message names the spec
    and the fix (download once while online, or pass a local directory). It is an ``OSError``, as
    the errors it replaces were.
    """


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message, or its type's name where it has none: what a report row
    or a wrapping error quotes of it."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def is_unavailable(error: BaseException) -> bool:
    """Whether ``error``, or an error it was raised from, says the weights are not reachable here.

    Loaders wrap the hub's errors (open_clip raises ``RuntimeError`` from ``FileNotFoundError``
    from huggingface_hub's ``LocalEntryNotFoundError``), so the whole chain is read, by type:
    not in the local cache, hub offline or unreachable, unknown or gated repository.
    """
    import urllib.error

    from huggingface_hub import errors as hub

    unavailable = (hub.LocalEntryNotFoundError, hub.OfflineModeIsEnabled, hub.RepositoryNotFoundError,
                   hub.GatedRepoError, ConnectionError, TimeoutError, urllib.error.URLError)
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, unavailable):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False
