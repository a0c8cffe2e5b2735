"""Transactions with authentication and authorization on, as Pulsar's ``ServerCnx`` guards them:
a transaction belongs to the role that opened it (NEW_TXN; kept in the coordinator's log, field 12
``owner`` of Pulsar's ``TransactionMetadataEntry``), so ADD_PARTITION_TO_TXN,
ADD_SUBSCRIPTION_TO_TXN and END_TXN from another role get ``TransactionNotFound`` ("neither the
owner of the transaction nor a super user") unless it is a superuser; END_TXN_ON_PARTITION, a
broker-to-broker call, is taken from a superuser only. The client is ``tests/txn_wire.py`` with a
token on CONNECT (the official Python client has no transactions)."""

from __future__ import annotations

import pytest

import txn_wire as tw
from token_util import SECRET_URL, TOKEN_PROVIDER, hs_token

TOPIC = "persistent://public/default/txn-owned"


def settings(data_dir) -> dict:
    return {
        "data_dir": data_dir,
        "authenticationEnabled": True,
        "authenticationProviders": TOKEN_PROVIDER,
        "tokenSecretKey": SECRET_URL,
        "authorizationEnabled": True,
        "superUserRoles": "admin",
        "transactionCoordinatorEnabled": True,
    }


def wire(broker, role: str) -> tw.TxnWire:
    return tw.TxnWire(broker.service_url, token=hs_token(role))


def refused(code: str, call) -> str:
    with pytest.raises(tw.TxnError) as e:
        call()
    assert e.value.code == code, e.value
    return str(e.value)


def test_only_its_owner_or_a_superuser_adds_to_or_ends_a_transaction(pulsar_broker_factory, tmp_path):
    b = pulsar_broker_factory(**settings(tmp_path / "data"))
    with wire(b, "admin") as admin, wire(b, "alice") as alice, wire(b, "bob") as bob:
        admin.connect_coordinator(0)
        mine, other = alice.new_txn(), alice.new_txn()
        alice.add_partition(mine, TOPIC)
        why = refused("TransactionNotFound", lambda: bob.add_partition(mine, TOPIC))
        assert "Client (bob) is neither the owner of the transaction" in why, why
        refused("TransactionNotFound", lambda: bob.add_subscription(mine, TOPIC, "s"))
        refused("TransactionNotFound", lambda: bob.end_txn(mine, commit=False))
        # Refused, not ended: its owner still commits it.
        alice.end_txn(mine, commit=True)
        # A superuser may end anyone's.
        admin.end_txn(other, commit=False)
        assert "is not found" in refused("TransactionNotFound", lambda: alice.end_txn(other, commit=True))

    # The owner is in the coordinator's log: it outlives a restart.
    b.stop()
    b = pulsar_broker_factory(**settings(tmp_path / "data"))
    with wire(b, "admin") as admin, wire(b, "alice") as alice, wire(b, "bob") as bob:
        admin.connect_coordinator(0)
        kept = alice.new_txn()
        b.stop()
    b = pulsar_broker_factory(**settings(tmp_path / "data"))
    with wire(b, "admin") as admin, wire(b, "alice") as alice, wire(b, "bob") as bob:
        admin.connect_coordinator(0)
        refused("TransactionNotFound", lambda: bob.end_txn(kept, commit=True))
        alice.end_txn(kept, commit=True)


def test_ending_a_transaction_on_a_topic_is_for_superusers(pulsar_broker_factory, tmp_path):
    b = pulsar_broker_factory(**settings(tmp_path / "data"))
    with wire(b, "admin") as admin, wire(b, "alice") as alice:
        admin.connect_coordinator(0)
        txn = alice.new_txn()
        why = refused("AuthorizationError", lambda: alice.end_txn_on_partition(txn, TOPIC, commit=False))
        assert "super user" in why, why
        # The brokers' role (a superuser) is answered: a topic never created ends at once.
        admin.end_txn_on_partition(txn, TOPIC, commit=False)
