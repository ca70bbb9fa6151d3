// An OpenAI-compatible embeddings endpoint for Universal Sentence Encoder
// lite, on loopback only: POST /v1/embeddings {"input": string | [string]}.
// router/routereval starts it to measure the router with the full model; the
// product never does. Usage: node server.js [port] (0 or none: any free
// port). It prints "listening http://127.0.0.1:PORT" once the model is
// loaded.
"use strict";
const http = require("http");
const { load } = require("./model");

const maxBody = 16 << 20;
const batch = 64;

async function main() {
  const model = await load();
  const server = http.createServer((req, res) => {
    const fail = (status, message) => {
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: { message, type: "invalid_request_error" } }));
    };
    if (req.method === "GET" && req.url === "/v1/models") {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [{ id: "use-lite", object: "model", owned_by: "embedserver" }] }));
      return;
    }
    if (req.method !== "POST" || req.url !== "/v1/embeddings") return fail(404, "not found");
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => {
      body += chunk;
      if (body.length > maxBody) req.destroy();
    });
    req.on("end", async () => {
      let input;
      try {
        input = JSON.parse(body).input;
      } catch (e) {
        return fail(400, "body is not JSON: " + e.message);
      }
      if (typeof input === "string") input = [input];
      if (!Array.isArray(input) || input.some((s) => typeof s !== "string")) {
        return fail(400, '"input" must be a string or an array of strings');
      }
      try {
        const data = [];
        for (let i = 0; i < input.length; i += batch) {
          // An empty text has no tokens, which the model cannot take.
          const texts = input.slice(i, i + batch).map((s) => (s.trim() === "" ? "." : s));
          const vecs = await model.embed(texts);
          vecs.forEach((embedding, j) => data.push({ object: "embedding", index: i + j, embedding }));
        }
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ object: "list", data, model: "use-lite", usage: { prompt_tokens: 0, total_tokens: 0 } }));
      } catch (e) {
        fail(500, "embedding failed: " + e.message);
      }
    });
  });
  const port = Number(process.argv[2] || 0);
  server.listen(port, "127.0.0.1", () => {
    console.log("listening http://127.0.0.1:" + server.address().port);
  });
  // The parent may go away without stopping us: stdin closing says so.
  process.stdin.on("end", () => process.exit(0));
  process.stdin.resume();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
