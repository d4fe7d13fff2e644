"""Shared fixtures. ``versitygw``: one real S3 server (versitygw, posix backend) on
127.0.0.1 for the whole session, installed with ``go install`` if missing; tests
using it are skipped only when it can be neither found nor installed."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def versitygw(tmp_path_factory):
    from parcomm.apps.bcast.versitygw import VersityGW, VersityGWNotAvailable, ensure_versitygw

    try:
        binary = ensure_versitygw(install=True)
    except VersityGWNotAvailable as exc:
        pytest.skip(f"versitygw unavailable: {exc}")
    with VersityGW(tmp_path_factory.mktemp("versitygw-root"), binary=binary) as gw:
        yield gw


@pytest.fixture(scope="session")
def s3_bucket(versitygw) -> str:
    """A bucket on the session's versitygw; tests use keys unique to themselves."""
    versitygw.create_bucket("parcomm-test")
    return "parcomm-test"
