// The media types of the two payload formats on HTTP (PROTOCOL.md "HTTP mapping"): the client sends and asks
// for them, the server's format registry reads and answers with them.
export const JSON_CONTENT_TYPE = 'application/json'
/** @trivium/codec's binary format. */
export const BINARY_CONTENT_TYPE = 'application/x-platform-binary'
