// The refusal of a request from an Origin the server does not allow: one text for CORS's preflight
// (@trivium/protections) and the WebSocket upgrade (@trivium/websocket), SPEC "CORS", PROTOCOL.md "WebSocket".

/** The message (a 403) of a request whose Origin is missing or not allowed. */
export const ORIGIN_NOT_ALLOWED = 'Origin not allowed'
