// Real OpenAI-compatible clients against a running AdaptBot, for
// app/openai_client_test.go: the official openai package and the Vercel AI
// SDK's @ai-sdk/openai-compatible. The Go test starts the server (with a
// scripted model on loopback) and passes its URL and keys in the
// environment; this prints one JSON object with what each case saw, and the
// Go test checks it.
import OpenAI from 'openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { streamText } from 'ai';

const baseURL = process.env.ADAPTBOT_URL + '/v1';
const key = process.env.ADAPTBOT_KEY; // a builder's
const userKey = process.env.ADAPTBOT_USER_KEY; // a user's: may not build
const client = new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });
const out = {};

// stream collects a streamed answer: the content, the tool calls, the id,
// the finish reason and the usage.
async function stream(c, body) {
  const s = await c.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  const got = { content: '', pieces: 0, calls: [], id: '', finish: null, usage: null };
  for await (const chunk of s) {
    got.id = chunk.id;
    if (chunk.usage) got.usage = chunk.usage;
    for (const ch of chunk.choices) {
      if (ch.delta.content) { got.content += ch.delta.content; got.pieces++; }
      for (const tc of ch.delta.tool_calls || []) got.calls.push(tc);
      if (ch.finish_reason) got.finish = ch.finish_reason;
    }
  }
  return got;
}

// failure is what an API error says, in the SDK's terms.
async function failure(f) {
  try {
    await f();
    return { status: 0 };
  } catch (e) {
    return { status: e.status, type: e.type, param: e.param, code: e.code, message: e.message, name: e.constructor.name };
  }
}

const models = await client.models.list();
out.models = models.data.map(m => m.id);

out.plain = await client.chat.completions.create({ model: 'adaptbot', messages: [{ role: 'user', content: 'hello' }] });

out.streamed = await stream(client, { model: 'adaptbot', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello there' }] });

out.calculator = await client.chat.completions.create({ model: 'adaptbot', messages: [{ role: 'user', content: 'what is 6 times 7?' }] });

// A build, agreed in a follow-up message.
const question = 'what is 2026 in roman numerals?';
out.offer = await client.chat.completions.create({ model: 'adaptbot', messages: [{ role: 'user', content: question }] });
const offer = out.offer.choices[0].message.content;
const agreed = [{ role: 'user', content: question }, { role: 'assistant', content: offer }, { role: 'user', content: 'yes' }];
out.refused = await client.chat.completions.create({ model: 'adaptbot', messages: agreed }, { headers: { Authorization: 'Bearer ' + userKey } });
out.built = await stream(client, { model: 'adaptbot', messages: agreed });
out.after = await client.chat.completions.create({ model: 'adaptbot', messages: [{ role: 'user', content: question }] });

// A tool of the client's: called, then continued with its result.
const tools = [{ type: 'function', function: { name: 'get_weather', description: 'The weather now in a city.', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
const ask = [{ role: 'user', content: 'what is the weather in Paris?' }];
out.toolCall = await client.chat.completions.create({ model: 'adaptbot', messages: ask, tools });
const m = out.toolCall.choices[0].message;
const call = m.tool_calls?.[0];
out.toolDone = await client.chat.completions.create({
  model: 'adaptbot', tools,
  messages: [...ask, m, { role: 'tool', tool_call_id: call?.id, content: 'sunny, 21 C' }],
});
out.toolStreamed = await stream(client, { model: 'adaptbot', messages: ask, tools });

// Bad input.
out.errors = {
  empty: await failure(() => client.chat.completions.create({ model: 'adaptbot', messages: [] })),
  role: await failure(() => client.chat.completions.create({ model: 'adaptbot', messages: [{ role: 'wizard', content: 'hi' }] })),
  orphan: await failure(() => client.chat.completions.create({ model: 'adaptbot', messages: [{ role: 'user', content: 'hi' }, { role: 'tool', tool_call_id: 'call_nope', content: '1' }] })),
  emptyStreamed: await failure(() => stream(client, { model: 'adaptbot', messages: [] })),
  n: await failure(() => client.chat.completions.create({ model: 'adaptbot', n: 2, messages: [{ role: 'user', content: 'hi' }] })),
  model: await failure(() => client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })),
  badKey: await failure(() => new OpenAI({ baseURL, apiKey: 'adaptbot_not-a-key', maxRetries: 0 }).chat.completions.create({ model: 'adaptbot', messages: [{ role: 'user', content: 'hi' }] })),
};

// The Vercel AI SDK, streamed.
const provider = createOpenAICompatible({ name: 'adaptbot', baseURL, apiKey: key, includeUsage: true });
const result = streamText({ model: provider('adaptbot'), prompt: 'hello from vercel' });
let vercel = '';
for await (const piece of result.textStream) vercel += piece;
out.vercel = { text: vercel, usage: await result.usage, finish: await result.finishReason };

console.log(JSON.stringify(out));
