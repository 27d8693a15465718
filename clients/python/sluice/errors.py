"""The exceptions the client raises: each message is one line naming the URL and what went wrong."""

from __future__ import annotations


class SluiceError(Exception):
    """Base of every error this package raises.

    Example::

        try:
            batch = client.batch(0)
        except sluice.SluiceError as e:
            print(f"error: {e}")
    """


class HTTPError(SluiceError):
    """The server answered with an error status; ``status`` and ``url`` say which and where.

    Example::

        except sluice.HTTPError as e:
            if e.status == 401: ...
    """

    def __init__(self, status: int, url: str, message: str) -> None:
        super().__init__(f"{url}: HTTP {status}: {message}")
        self.status = status
        self.url = url
        self.server_message = message


class AuthError(HTTPError):
    """HTTP 401: the bearer token is missing or wrong (never retried).

    Example::

        SluiceIterableDataset(url, token=os.environ["SLUICE_TOKEN"])  # instead of no token
    """


class NotFoundError(HTTPError):
    """HTTP 404 for something other than the end of the sequence: the URL is not a ``sluice serve`` base.

    Example::

        Client("http://127.0.0.1:8080")  # the base URL, without /v1/...
    """


class BadRequestError(HTTPError):
    """HTTP 400: the server refused the request as malformed (never retried).

    Example::

        except sluice.BadRequestError as e: print(e.server_message)
    """


class ServerError(HTTPError):
    """HTTP 5xx that persisted through every retry (the server's message included).

    Example::

        except sluice.ServerError as e: print("the server failed:", e.server_message)
    """


class UnreachableError(SluiceError):
    """No server answered (connection refused, reset or timed out) after every retry.

    Example::

        Client(["http://a:8080", "http://b:8080"], retries=8)  # more attempts, two servers
    """


class ProtocolError(SluiceError):
    """A response that is not what ``sluice serve`` sends: a malformed or truncated batch body.

    Example::

        except sluice.ProtocolError as e: print("not a sluice batch:", e)
    """


class StateError(SluiceError):
    """A resume state that does not fit: malformed, or saved for another job (plan or data).

    Example::

        ds.load_state_dict(torch.load("ckpt.pt")["data"])  # raises StateError for another job's state
    """
