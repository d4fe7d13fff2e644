"""The storage-broadcast lower bound against hand-computed cases."""

import pytest
from parcomm.models.storage_broadcast import broadcast_lower_bound

MB = 1e6


def test_single_node_is_one_download():
    b = broadcast_lower_bound(100 * MB, 1, storage_rate=1e9, node_storage_rate=10 * MB, b_down=100 * MB, b_up=100 * MB)
    assert b.seconds == pytest.approx(10.0)
    assert b.binding == "per_node_download"


def test_storage_egress_binds_when_storage_is_slow():
    # 8 nodes with fast NICs but storage gives 5 MB/s in total: D/S = 200 s.
    b = broadcast_lower_bound(
        1000 * MB, 8, storage_rate=5 * MB, node_storage_rate=5 * MB, b_down=1000 * MB, b_up=1000 * MB
    )
    assert b.storage_egress_s == pytest.approx(200.0)
    assert b.binding == "storage_egress"


def test_total_delivery_binds_when_uploads_are_slow():
    # N D / (s + N b_up) = 32*1000 / (100 + 32*10) = 76.19 s.
    b = broadcast_lower_bound(
        1000 * MB, 32, storage_rate=100 * MB, node_storage_rate=10 * MB, b_down=100 * MB, b_up=10 * MB
    )
    assert b.total_delivery_s == pytest.approx(32 * 1000 / (100 + 320))
    assert b.binding == "total_delivery"
    assert b.seconds == pytest.approx(b.total_delivery_s)


def test_startup_terms_and_fraction():
    b = broadcast_lower_bound(
        10 * MB,
        4,
        storage_rate=1e9,
        node_storage_rate=10 * MB,
        b_down=10 * MB,
        b_up=10 * MB,
        latency_s=0.05,
        piece_size=1 * MB,
    )
    assert b.startup_s == pytest.approx(0.05 + 0.1)
    assert b.fraction_of(2 * b.seconds) == pytest.approx(0.5)


def test_empty_object_takes_no_time():
    b = broadcast_lower_bound(
        0, 4, storage_rate=1, node_storage_rate=1, b_down=1, b_up=1, latency_s=0.05, piece_size=32768
    )
    assert b.seconds == 0.0


@pytest.mark.parametrize("field", ["storage_rate", "node_storage_rate", "b_down", "b_up"])
def test_bad_rates_name_the_field(field):
    kwargs = dict(storage_rate=1.0, node_storage_rate=1.0, b_down=1.0, b_up=1.0)
    kwargs[field] = 0.0
    with pytest.raises(ValueError, match=field):
        broadcast_lower_bound(1, 2, **kwargs)
