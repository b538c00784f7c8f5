"""The request handlers of the resource verbs, one module per verb or subresource (upstream's
``apiserver/pkg/endpoints/handlers``): each takes the :class:`~kubesched.apiserver.app.ApiServer`
it serves, the strategy of the resource and what the request said."""
