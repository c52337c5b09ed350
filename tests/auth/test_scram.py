"""SCRAM server conversation: published test vectors, an independent client, failures."""

from __future__ import annotations

import base64
import importlib.util
import pathlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pymongo.saslprep import saslprep as pymongo_saslprep

from mongosim.router.auth.saslprep import SASLprepError, saslprep
from mongosim.router.auth.scram import (
    ScramCredential,
    ScramError,
    ScramServerConversation,
    decode_username,
    encode_username,
    make_credential,
    mongo_password_digest,
)

_spec = importlib.util.spec_from_file_location("scram_client", pathlib.Path(__file__).with_name("scram_client.py"))
scram_client = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scram_client)
ScramClient = scram_client.ScramClient


def _fixed(nonce: str):
    return lambda: nonce


# -- published conversations (MongoDB auth spec; RFC 7677) ---------------------------------------


def test_mongodb_spec_scram_sha1_conversation_reproduces_exactly():
    cred = make_credential(
        "SCRAM-SHA-1", "user", "pencil", salt=base64.b64decode("rQ9ZY3MntBeuP3E1TDVC4w=="), iterations=10000
    )
    conv = ScramServerConversation(
        "SCRAM-SHA-1", lambda user: cred, skip_empty_exchange=True, nonce_factory=_fixed("Ho+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE")
    )
    assert conv.step(b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL") == (
        False,
        b"r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000",
    )
    assert conv.step(
        b"c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,p=MC2T8BvbmWRckDw8oWl5IVghwCY="
    ) == (True, b"v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=")
    assert conv.success and conv.principal == "user"


def test_rfc7677_scram_sha256_example_reproduces_exactly():
    cred = make_credential(
        "SCRAM-SHA-256", "user", "pencil", salt=base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="), iterations=4096
    )
    conv = ScramServerConversation("SCRAM-SHA-256", lambda user: cred, nonce_factory=_fixed("%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"))
    assert conv.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == (
        False,
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    )
    done, final = conv.step(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert (done, final) == (False, b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    assert not conv.success
    # without skipEmptyExchange a third, empty exchange completes the conversation
    assert conv.step(b"") == (True, b"")
    assert conv.success
    with pytest.raises(ScramError, match="Invalid SCRAM authentication step: 4"):
        conv.step(b"")


def test_rfc5802_stored_key_derivation():
    # RFC 5802 section 5: user "user", password "pencil" (plain, i.e. digestPassword false), 4096 iterations.
    cred = make_credential(
        "SCRAM-SHA-1",
        "user",
        "pencil",
        salt=base64.b64decode("QSXCR+Q6sek8bf92"),
        iterations=4096,
        digest_password=False,
    )
    conv = ScramServerConversation("SCRAM-SHA-1", lambda user: cred, nonce_factory=_fixed("3rfcNHYJY1ZVvWVs7j"))
    assert conv.step(b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL")[1] == (
        b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"
    )
    assert conv.step(b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=") == (
        False,
        b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
    )


# -- stored credentials --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mechanism", "key_len", "salt_len", "count"), [("SCRAM-SHA-1", 28, 24, 10000), ("SCRAM-SHA-256", 44, 40, 15000)]
)
def test_credential_shape_matches_server(mechanism, key_len, salt_len, count):
    cred = make_credential(mechanism, "alice", "secret")
    doc = cred.to_doc()
    assert list(doc) == ["iterationCount", "salt", "storedKey", "serverKey"]
    assert doc["iterationCount"] == count
    assert len(doc["salt"]) == salt_len
    assert len(doc["storedKey"]) == key_len and len(doc["serverKey"]) == key_len
    assert ScramCredential.from_doc(mechanism, doc) == cred


def test_credential_from_doc_rejects_garbage():
    with pytest.raises(ValueError):
        ScramCredential.from_doc("SCRAM-SHA-1", {"iterationCount": 1, "salt": "x", "storedKey": "!", "serverKey": ""})
    with pytest.raises(ValueError):
        ScramCredential.from_doc("SCRAM-SHA-256", {"salt": "AA=="})


def test_mongo_password_digest():
    assert mongo_password_digest("user", "pencil") == "1c33006ec1ffd90f9cadcbcc0e118200"


# -- a full conversation against an independent client -------------------------------------------


@pytest.fixture(scope="module")
def creds():
    # PBKDF2 is the slow part: compute each credential once per module.
    return {mech: make_credential(mech, "bob", "s3cr\u00e9t") for mech in ("SCRAM-SHA-1", "SCRAM-SHA-256")}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
@pytest.mark.parametrize("skip", [True, False])
def test_independent_client_authenticates(creds, mechanism, skip):
    client = ScramClient(mechanism, "bob", "s3cr\u00e9t", "clientnonce123")
    conv = ScramServerConversation(mechanism, lambda user: creds[mechanism] if user == "bob" else None, skip_empty_exchange=skip)
    done, server_first = conv.step(client.first())
    assert not done and server_first.startswith(b"r=clientnonce123")
    done, server_final = conv.step(client.final(server_first))
    assert client.verify(server_final)
    assert done is skip
    if not skip:
        assert conv.step(b"") == (True, b"")
    assert conv.success


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_wrong_password_fails(creds, mechanism):
    client = ScramClient(mechanism, "bob", "wrong", "clientnonce123")
    conv = ScramServerConversation(mechanism, lambda user: creds[mechanism], skip_empty_exchange=True)
    _, server_first = conv.step(client.first())
    with pytest.raises(ScramError) as info:
        conv.step(client.final(server_first))
    assert info.value.code_name == "AuthenticationFailed"
    assert not conv.success


def test_server_nonce_is_base64_of_24_bytes(creds):
    conv = ScramServerConversation("SCRAM-SHA-256", lambda user: creds["SCRAM-SHA-256"])
    _, first = conv.step(b"n,,n=bob,r=abcdefgh")
    rnonce = first.decode().split(",")[0][2:]
    assert rnonce.startswith("abcdefgh")
    assert len(base64.b64decode(rnonce[len("abcdefgh") :], validate=True)) == 24


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (b"n=bob", "Incorrect number of arguments"),
        (b"p=tls-unique,,n=bob,r=abcdef", "Server does not support channel binding"),
        (b"x,,n=bob,r=abcdef", "Incorrect SCRAM client message prefix: x"),
        (b"n,b=bob,n=bob,r=abcdef", "Incorrect SCRAM authzid"),
        (b"n,a=eve,n=bob,r=abcdef", "does not match authzid"),
        (b"n,,m=ext,n=bob,r=abcdef", "mandatory extensions"),
        (b"n,,n=,r=abcdef", "Invalid SCRAM user name"),
        (b"n,,n=bob,r=ab", "Invalid SCRAM client nonce"),
        (b"n,,n=bob", "Incorrect number of arguments"),
        (b"\xff\xfe", "UTF-8"),
    ],
)
def test_garbled_client_first(creds, message, reason):
    conv = ScramServerConversation("SCRAM-SHA-256", lambda user: creds["SCRAM-SHA-256"])
    with pytest.raises(ScramError, match=reason):
        conv.step(message)


def test_authzid_equal_to_user_is_accepted(creds):
    conv = ScramServerConversation("SCRAM-SHA-256", lambda user: creds["SCRAM-SHA-256"])
    assert conv.step(b"n,a=bob,n=bob,r=abcdef")[0] is False


@pytest.mark.parametrize(
    ("final", "reason"),
    [
        (b"c=biws", "Incorrect number of arguments"),
        (b"c=biws,r=NONCE,q=x", "Incorrect SCRAM ClientProof"),
        (b"r=NONCE,p=AAAA", "Incorrect number of arguments"),
        (b"x=biws,r=NONCE,p=AAAA", "Incorrect SCRAM channel binding"),
        (b"c=biws,x=NONCE,p=AAAA", "Incorrect SCRAM client|server nonce"),
        (b"c=biws,r=someothernonce,p=AAAA", "Unmatched SCRAM nonce"),
        (b"c=biws,r=NONCE,p=AAAA", "storedKey mismatch"),
        (b"c=biws,r=NONCE,p=not-base64!!", "storedKey mismatch"),
    ],
)
def test_garbled_client_final(creds, final, reason):
    conv = ScramServerConversation("SCRAM-SHA-256", lambda user: creds["SCRAM-SHA-256"], skip_empty_exchange=True)
    _, first = conv.step(b"n,,n=bob,r=abcdef")
    nonce = first.decode().split(",")[0][2:]
    with pytest.raises(ScramError, match=reason):
        conv.step(final.replace(b"NONCE", nonce.encode()))
    assert not conv.success


def test_replayed_client_final_fails_in_a_new_conversation(creds):
    client = ScramClient("SCRAM-SHA-256", "bob", "s3cr\u00e9t", "clientnonce123")
    conv = ScramServerConversation("SCRAM-SHA-256", lambda user: creds["SCRAM-SHA-256"], skip_empty_exchange=True)
    _, first = conv.step(client.first())
    final = client.final(first)
    assert conv.step(final)[0]
    replay = ScramServerConversation("SCRAM-SHA-256", lambda user: creds["SCRAM-SHA-256"], skip_empty_exchange=True)
    replay.step(client.first())  # a fresh server nonce
    with pytest.raises(ScramError, match="Unmatched SCRAM nonce"):
        replay.step(final)


def test_user_without_mechanism_credentials(creds):
    conv = ScramServerConversation("SCRAM-SHA-256", lambda user: None)
    with pytest.raises(ScramError) as info:
        conv.step(b"n,,n=bob,r=abcdef")
    assert info.value.code_name == "MechanismUnavailable"


def test_skip_empty_exchange_option_must_be_boolean():
    conv = ScramServerConversation("SCRAM-SHA-256", lambda user: None)
    with pytest.raises(ScramError, match="skipEmptyExchange must be boolean"):
        conv.set_options({"skipEmptyExchange": 1})
    conv.set_options({"skipEmptyExchange": True, "other": 1})
    assert conv.total_steps == 2


# -- user names and SASLprep ----------------------------------------------------------------------


@given(st.text())
def test_username_escaping_round_trips(name):
    encoded = encode_username(name)
    assert "," not in encoded
    assert decode_username(encoded) == name


@given(st.text(alphabet=st.sampled_from(["=", ",", "a", "3", "D", "2", "C", "\u00e9", "\u2168"]), min_size=1))
def test_special_user_names_authenticate(name):
    cred = make_credential("SCRAM-SHA-1", name, "pw", iterations=4096)
    client = ScramClient("SCRAM-SHA-1", name, "pw", "nonce-1234")
    seen = []

    def lookup(user):
        seen.append(user)
        return cred if user == name else None

    conv = ScramServerConversation("SCRAM-SHA-1", lookup, skip_empty_exchange=True)
    _, first = conv.step(client.first())
    done, final = conv.step(client.final(first))
    assert done and client.verify(final) and seen == [name] and conv.principal == name


def _pymongo_or_error(text):
    try:
        return pymongo_saslprep(text)
    except ValueError:
        return ValueError
    except IndexError:  # pymongo's saslprep indexes data[0] even when mapping emptied the string
        return ""


def _ours_or_error(text):
    try:
        return saslprep(text)
    except SASLprepError:
        return ValueError


@given(st.text())
def test_saslprep_agrees_with_pymongo(text):
    assert _ours_or_error(text) == _pymongo_or_error(text)


@pytest.mark.parametrize(
    ("raw", "prepared"),
    [
        ("I\u00adX", "IX"),  # soft hyphen mapped to nothing (RFC 4013 section 3)
        ("user", "user"),
        ("USER", "USER"),
        ("\u00aa", "a"),
        ("\u2168", "IX"),
        ("a\u00a0b", "a b"),  # non-ASCII space mapped to SPACE
    ],
)
def test_saslprep_rfc4013_examples(raw, prepared):
    assert saslprep(raw) == prepared


@pytest.mark.parametrize("raw", ["\u0007", "\u0627\u0031"])
def test_saslprep_rfc4013_errors(raw):
    with pytest.raises(SASLprepError):
        saslprep(raw)


@given(st.text())
@example(password="\xad")
def test_sha256_password_preparation_matches_pymongo_client(password):
    # The credential we store must be what pymongo's client derives from the same password.
    # A password SASLprep maps to nothing is refused (pymongo's client fails on it too).
    expected = _pymongo_or_error(password)
    if expected is ValueError or (password and not expected):
        with pytest.raises(SASLprepError):
            make_credential("SCRAM-SHA-256", "u", password, iterations=4096, salt=b"0123456789abcdef")
        return
    ours = make_credential("SCRAM-SHA-256", "u", password, iterations=4096, salt=b"0123456789abcdef")
    theirs = make_credential("SCRAM-SHA-256", "u", expected, iterations=4096, salt=b"0123456789abcdef")
    assert ours == theirs
