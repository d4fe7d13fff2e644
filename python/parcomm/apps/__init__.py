"""Applications built on parcomm's layers, one subpackage each (``mcast``: reliable
multicast with repair routers, seed 003)."""
