"""Who is asking over HTTP (app.serving.identify): the proxy's headers only with its secret, a personal
token, the shared secret, the session cookie, in that order; a repeated identity header refused."""

import pytest
from starlette.datastructures import Headers

from app.serving.identify import Identifier, RepeatedHeaderError, utf8
from app.users.identity import SHARED, Identity

ALICE = Identity("alice", ("everyone", "user:alice", "経理"), "user")


class Sessions:
    """The page's sessions: one cookie known."""

    def identity(self, cookie):
        return Identity("carol", ("user:carol", "everyone"), "session") if cookie == "rs_carol" else None


def identifier(**proxy) -> Identifier:
    return Identifier(
        lookup=lambda token: ALICE if token == "rag_alice" else None,
        shared_secret="s3cret-shared",
        sessions=Sessions(),
        **proxy,
    )


PROXY = {"user_header": "X-User", "groups_header": "X-Groups", "proxy_secret": "proxy-key"}


def headers(*pairs: tuple[str, str]) -> Headers:
    """Request headers as HTTP carries them: UTF-8 names arrive as Latin-1 text."""
    return Headers(raw=[(k.lower().encode("latin-1"), v.encode("utf-8")) for k, v in pairs])


def test_a_personal_token_names_its_user_and_the_shared_secret_everyone():
    who = identifier()
    assert who.identify(headers(("Authorization", "Bearer rag_alice"))) == ALICE
    assert who.identify(headers(("Authorization", "Bearer s3cret-shared"))) == SHARED
    assert who.identify(headers(("Authorization", "Bearer rag_unknown"))) is None
    assert who.identify(headers(("Authorization", "Bearer wrong"))) is None


def test_the_session_cookie_comes_last():
    who = identifier()
    assert who.identify(headers(), cookie="rs_carol").name == "carol"
    assert who.identify(headers(("Authorization", "Bearer rag_alice")), cookie="rs_carol") == ALICE
    assert who.identify(headers(), cookie="rs_nobody") is None and who.identify(headers()) is None


def test_the_proxy_is_believed_only_with_its_secret():
    who = identifier(**PROXY)
    vouched = who.identify(headers(("X-User", "bob"), ("X-Groups", "営業"), ("X-Auth-Proxy-Secret", "proxy-key")))
    assert (vouched.name, vouched.principals, vouched.kind) == ("bob", ("everyone", "user:bob", "営業"), "proxy")
    assert who.identify(headers(("X-User", "bob"), ("X-Auth-Proxy-Secret", "guess"))) is None
    assert who.identify(headers(("X-User", "bob"))) is None
    assert (
        identifier().identify(headers(("X-User", "bob"), ("X-Auth-Proxy-Secret", "proxy-key"))) is None
    )  # no proxy set up


@pytest.mark.parametrize("name", ["Authorization", "X-User", "X-Auth-Proxy-Secret"])
def test_an_identity_header_sent_twice_is_refused(name):
    twice = headers((name, "a"), (name, "b"), ("X-Groups", "x"))
    with pytest.raises(RepeatedHeaderError):
        identifier(**PROXY).identify(twice)


def test_header_values_are_read_as_utf8_and_anything_else_refused():
    assert utf8("経理".encode().decode("latin-1")) == "経理"
    assert utf8("\xff") is None and utf8(None) is None
