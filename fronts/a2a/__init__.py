"""The A2A front (SPEC §18): a space as an agent that other agents hand work to, over A2A v1.0.

``card`` the Agent Card, ``views`` and ``urls`` both bindings (JSON-RPC, HTTP+JSON),
``operations`` the operations over the commands, ``messages`` what a message asks for,
``tasks`` a task as an A2A Task, ``streams`` its updates from the feed, ``push`` the push
notification configs and their deliveries, ``answers`` and ``errors`` how refusals travel.
"""
