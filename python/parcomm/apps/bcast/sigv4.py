"""AWS Signature Version 4 for S3 requests with a header ``Authorization``: sans-IO, standard library only.

Written from AWS's description of the algorithm ("Authenticating Requests: Using the
Authorization Header (AWS Signature Version 4)", Amazon S3 API reference,
https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, and "Create a
signed AWS API request", https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html):

1. canonical request: method, URI-encoded path, canonical query, ``name:value`` lines of the
   signed headers (lower-case names, sorted, values trimmed), the signed header names joined by
   ``;``, the payload hash;
2. string to sign: ``AWS4-HMAC-SHA256``, the request time, the scope
   ``DATE/REGION/SERVICE/aws4_request``, the hex SHA-256 of the canonical request;
3. signing key: HMAC-SHA256 chained over ``"AWS4" + secret``, date, region, service, ``aws4_request``;
4. signature: hex HMAC-SHA256 of the string to sign under the signing key.

Only what ``parcomm bcast``'s data path sends is covered: GET and HEAD without a body (payload
hash ``UNSIGNED-PAYLOAD`` or that of the empty string) and without a query string. The secret
appears in no ``repr`` and no exception raised here.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass, field

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
EMPTY_PAYLOAD_SHA256 = hashlib.sha256(b"").hexdigest()
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)


def uri_encode(text: str, *, keep_slash: bool) -> str:
    """Percent-encode every UTF-8 byte but ``A-Z a-z 0-9 - . _ ~`` (and ``/`` if ``keep_slash``),
    with upper-case hex, as SigV4's ``UriEncode`` does (an object key keeps its slashes)."""
    out = []
    for byte in text.encode("utf-8"):
        if byte in _UNRESERVED or (keep_slash and byte == 0x2F):
            out.append(chr(byte))
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def amz_date(now: float | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ`` (UTC) of ``now`` (default: the current time)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))


def _canonical_headers(headers: dict[str, str]) -> tuple[str, str]:
    """(``name:value\\n`` lines, ``name;name``): names lower-cased and sorted, values trimmed and
    their inner runs of spaces made one."""
    items = sorted((name.strip().lower(), " ".join(value.split())) for name, value in headers.items())
    return "".join(f"{n}:{v}\n" for n, v in items), ";".join(n for n, _ in items)


def canonical_request(method: str, path: str, headers: dict[str, str], payload_hash: str, query: str = "") -> str:
    """The canonical request; ``path`` is already URI-encoded (as sent on the request line)
    and ``headers`` are exactly those to sign."""
    lines, signed = _canonical_headers(headers)
    return "\n".join([method, path or "/", query, lines, signed, payload_hash])


def scope(date: str, region: str, service: str = "s3") -> str:
    return f"{date}/{region}/{service}/aws4_request"


def string_to_sign(request_time: str, credential_scope: str, canonical: str) -> str:
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return "\n".join([ALGORITHM, request_time, credential_scope, digest])


def signing_key(secret_key: str, date: str, region: str, service: str = "s3") -> bytes:
    key = ("AWS4" + secret_key).encode("utf-8")
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return key


def signature(key: bytes, to_sign: str) -> str:
    return hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def sign(
    method: str,
    host: str,
    path: str,
    headers: dict[str, str],
    credentials: Credentials,
    region: str,
    *,
    payload_hash: str = UNSIGNED_PAYLOAD,
    now: float | None = None,
    service: str = "s3",
) -> dict[str, str]:
    """The headers of a signed request: ``headers`` (all signed, e.g. Range, If-Match) plus
    ``host``, ``x-amz-date``, ``x-amz-content-sha256``, ``x-amz-security-token`` (with a
    session token) and ``Authorization``."""
    request_time = amz_date(now)
    date = request_time[:8]
    out = {**headers, "host": host, "x-amz-content-sha256": payload_hash, "x-amz-date": request_time}
    if credentials.session_token:
        out["x-amz-security-token"] = credentials.session_token
    canonical = canonical_request(method, path, out, payload_hash)
    credential_scope = scope(date, region, service)
    to_sign = string_to_sign(request_time, credential_scope, canonical)
    sig = signature(signing_key(credentials.secret_key, date, region, service), to_sign)
    signed = _canonical_headers(out)[1]
    out["Authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key}/{credential_scope},SignedHeaders={signed},Signature={sig}"
    )
    return out
