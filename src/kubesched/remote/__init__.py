"""Scheduling a real cluster: the API client, discovery, the mirror store its reflectors fill, and
the event loop thread they run on. The submodules are imported where used (this package imports
nothing, so loading one part does not pull in aiohttp or kubernetes_asyncio)."""
