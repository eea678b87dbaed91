/**
 * The clawray OpenClaw plugin (successor of OpenClaw-RL's `rl-training-headers`): every model
 * request OpenClaw sends to the `clawray` provider carries `X-Session-Id` and `X-Turn-Type`
 * (`main` for a user's turn; `side` for memory flushes, compaction summaries, heartbeat, cron
 * and OpenClaw's other internal runs), so a clawray job records and trains on real turns only.
 *
 * Why a provider plugin: current OpenClaw sends model requests through its provider transport
 * (the OpenAI SDK with its own fetch), so OpenClaw-RL's patch of `globalThis.fetch` never sees
 * them. A plugin that owns the `clawray` provider id gets `wrapStreamFn`, which wraps every
 * request of that provider, compaction included, and may add headers. The run's trigger comes
 * from the agent hooks (`before_model_resolve`, `llm_input`), which need
 * `plugins.entries.clawray.hooks.allowConversationAccess: true`.
 *
 * When OpenClaw ends a session (`/new`, `/reset`, idle or daily rollover, deletion,
 * compaction), the plugin ends it on the job too (`POST /rl/end_session` beside the provider's
 * `baseUrl`), so its last turn is judged at once rather than after the job's idle timeout.
 *
 * Optional `systemPrompt` replaces OpenClaw's generated system prompt (7 KB with tools denied,
 * 39 KB by default) on clawray runs, through `before_prompt_build`, for policies whose context
 * is a few thousand tokens.
 */
import { endSession, endsSession } from './session-end.js';
import { RunTriggers, tagsFor } from './turn-tags.js';

const PROVIDER_ID = 'clawray';

/**
 * @param {((model: unknown, context: unknown, options?: Record<string, unknown>) => unknown) | undefined} inner
 * @param {RunTriggers} runs
 * @param {{ utility?: boolean }} kind
 */
function tagging(inner, runs, kind) {
  if (typeof inner !== 'function') return undefined;
  return (model, context, options) =>
    inner(model, context, {
      ...options,
      headers: { ...(options?.headers ?? {}), ...tagsFor(options ?? {}, runs, kind) },
    });
}

export default {
  id: 'clawray',
  name: 'clawray',
  description: 'Tags clawray model requests with X-Session-Id and X-Turn-Type for live RL training',
  /** @param {any} api OpenClaw's plugin API */
  register(api) {
    const runs = new RunTriggers();
    const config = api.pluginConfig ?? {};
    const systemPrompt = typeof config.systemPrompt === 'string' ? config.systemPrompt : undefined;
    const entry = api.config?.plugins?.entries?.[api.id ?? 'clawray'];
    if (entry?.hooks?.allowConversationAccess !== true) {
      api.logger?.warn?.(
        'clawray: plugins.entries.clawray.hooks.allowConversationAccess is not true, so the run trigger is unknown ' +
          'and X-Turn-Type is sent only for compaction (the server classifies the rest by their text)',
      );
    }

    api.registerProvider({
      id: PROVIDER_ID,
      label: 'clawray (live RL policy)',
      auth: [],
      wrapStreamFn: (ctx) => tagging(ctx.streamFn, runs, {}),
      wrapSimpleCompletionStreamFn: (ctx) => tagging(ctx.streamFn, runs, { utility: true }),
    });

    /** @param {unknown} _event @param {any} ctx */
    const note = (_event, ctx) => {
      runs.note(ctx?.runId, ctx?.trigger);
      return undefined;
    };
    api.on('before_model_resolve', note);
    api.on('llm_input', note);
    api.on('agent_end', (/** @type {unknown} */ _event, /** @type {any} */ ctx) => {
      runs.end(ctx?.runId);
    });

    const provider = api.config?.models?.providers?.[PROVIDER_ID];
    api.on('session_end', async (/** @type {any} */ event, /** @type {any} */ ctx) => {
      const sessionId = event?.sessionId ?? ctx?.sessionId;
      if (!endsSession(event?.reason) || typeof sessionId !== 'string' || !sessionId) return;
      if (typeof provider?.baseUrl !== 'string') return;
      try {
        const { ok, status } = await endSession({
          baseUrl: provider.baseUrl,
          apiKey: typeof provider.apiKey === 'string' ? provider.apiKey : undefined,
          sessionId,
        });
        if (!ok)
          api.logger?.warn?.(`clawray: ending session ${sessionId} on the job answered HTTP ${status}`);
      } catch (err) {
        api.logger?.warn?.(`clawray: could not end session ${sessionId} on the job: ${String(err)}`);
      }
    });

    if (systemPrompt) {
      api.on('before_prompt_build', (/** @type {unknown} */ _event, /** @type {any} */ ctx) =>
        ctx?.modelProviderId === undefined || ctx.modelProviderId === PROVIDER_ID
          ? { systemPrompt }
          : undefined,
      );
    }
  },
};
