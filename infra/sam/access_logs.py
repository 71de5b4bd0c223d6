"""What every stage's access log records of its caller (the REST stage, infra.sam.api, and
the live WebSocket stage, infra.sam.live)."""

#: Who called (the IAM identity for SigV4 callers), in every stage's access log (this REST
#: stage's and the live WebSocket stage's). `extendedRequestId` is API Gateway's own id; a
#: client can set `requestId`.
WHO_CALLED = {
    "requestId": "$context.requestId",
    "extendedRequestId": "$context.extendedRequestId",
    "ip": "$context.identity.sourceIp",
    "caller": "$context.identity.caller",
    "user": "$context.identity.user",
    "userArn": "$context.identity.userArn",
}
