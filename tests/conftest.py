import pytest


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Each test gets its own result cache (and cache key), so no test sees another's results or the user's."""
    monkeypatch.setenv("RLLINT_CACHE_DIR", str(tmp_path_factory.mktemp("rllint-cache")))
    monkeypatch.setenv("RLLINT_CACHE_KEY", str(tmp_path_factory.mktemp("rllint-key") / "cache-key"))
