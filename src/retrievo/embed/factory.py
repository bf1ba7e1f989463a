"""Build the embedder a Config asks for."""

from __future__ import annotations

from retrievo.config import Config, cache_folder
from retrievo.embed.base import Embedder
from retrievo.errors import ConfigError


def make_embedder(config: Config) -> Embedder | None:
    """``None`` means keyword-only by choice (``embedder = none``)."""
    if config.embedder == "none":
        return None
    if config.embedder == "local":
        from retrievo.embed.local import MiniLMEmbedder

        return MiniLMEmbedder(prepared_dir=cache_folder(config) / "models")
    if config.embedder == "static":
        from retrievo.embed.static import StaticEmbedder

        return StaticEmbedder()
    from retrievo.embed.http import OllamaEmbedder, OpenAIEmbedder

    if not config.embed_model:
        raise ConfigError(f"the {config.embedder} embedder needs a model name: set RETRIEVO_EMBED_MODEL")
    if config.embedder == "openai":
        url = config.embed_url or "https://api.openai.com/v1"
        return OpenAIEmbedder(
            url, config.embed_model, api_key=config.embed_api_key, concurrency=config.embed_concurrency
        )
    url = config.embed_url or "http://127.0.0.1:11434"
    return OllamaEmbedder(
        url, config.embed_model, api_key=config.embed_api_key, concurrency=config.embed_concurrency
    )
