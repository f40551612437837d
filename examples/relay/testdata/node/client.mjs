// An unmodified third-party WebSocket client (npm's ws) talking to the
// relay: it sends COUNT messages, alternating text and binary, then the
// end-of-input message, and prints what came back as one JSON line.
// usage: node client.mjs URL COUNT
import WebSocket from "ws";

const [url, countArg] = process.argv.slice(2);
const count = Number(countArg);
const ws = new WebSocket(url);
const sent = [];
const got = [];
ws.on("open", () => {
  for (let i = 0; i < count; i++) {
    if (i % 2 === 0) {
      const s = JSON.stringify({ n: i, text: "message " + i });
      sent.push({ type: "text", data: s });
      ws.send(s);
    } else {
      const b = Buffer.alloc(320 + i);
      b.writeUInt32LE(i, 0);
      b.fill(i & 0xff, 4);
      sent.push({ type: "binary", data: b.toString("base64") });
      ws.send(b);
    }
  }
  ws.send(JSON.stringify({ type: "end" }));
});
ws.on("message", (data, isBinary) => {
  got.push(isBinary ? { type: "binary", data: Buffer.from(data).toString("base64") } : { type: "text", data: data.toString() });
});
ws.on("close", (code, reason) => {
  let mismatch = -1;
  for (let i = 0; i < Math.max(sent.length, got.length); i++) {
    if (!got[i] || !sent[i] || got[i].type !== sent[i].type || got[i].data !== sent[i].data) { mismatch = i; break; }
  }
  console.log(JSON.stringify({ sent: sent.length, received: got.length, mismatch, code, reason: reason.toString() }));
});
ws.on("error", (err) => { console.log(JSON.stringify({ error: err.message })); process.exit(1); });
