"""Live delivery of a run: events and text deltas pushed to watchers as they are committed
(live), the WebSocket API's messages (live_ws), and the signed right to watch one run
(watch_token).

May import: runtime.events (and the standard library). Must not import the engine, the
service, infra or handlers: handlers.live and the engine's listeners call into it.
"""
