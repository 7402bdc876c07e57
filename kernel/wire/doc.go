// Package wire is the Jupyter messaging wire format (protocol 5.3): message
// headers, HMAC-SHA256 signing with constant-time verification, the
// <IDS|MSG> multipart framing with ZeroMQ routing identities, and connection
// files.
//
// Start with [Signer]: Encode turns a [Message] into frames ready for a
// ZeroMQ socket, Decode turns frames read from a socket into a verified
// Message. Frames from the network are hostile: Decode checks frame counts,
// sizes and signatures before it looks at anything else, and never panics.
//
// The parent header, metadata and content of a Message are kept as raw JSON
// so that a proxy can forward them unchanged and only parse what it needs.
package wire
