import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { fieldOf } from './field-of.ts';
import { plainText, title } from './format.ts';
import { cutChars } from './truncate.ts';

/**
 * Pushover's message API: `message` at most 1,024 characters, `title` 250, `url` 512; `priority`
 * -2 to 2, where 2 (emergency) repeats every `retry` seconds (at least 30) until acknowledged or
 * `expire` (at most 10,800) passes; 200 `{"status":1}`, 4xx `{"status":0,"errors":[…]}`, 429 when
 * the application's monthly quota is spent. Source: https://pushover.net/api
 */
export const PUSHOVER_LIMITS = { message: 1024, title: 250 } as const;
/** Alertmanager's defaults for an emergency message: retry every minute, for an hour. */
const EMERGENCY = { retry: 60, expire: 3600 } as const;

export interface PushoverSettings {
  readonly url: string;
  readonly token: string;
  readonly user_key: string;
  /** -2 to 2; by default Alertmanager's: 2 (emergency) while firing, 0 resolved. */
  readonly priority?: string;
  readonly sound?: string;
  readonly device?: string;
}

/** One message per notification, as Alertmanager sends it: the title, then the alerts that fit and how many more. */
export function pushoverChannel(settings: PushoverSettings): Channel {
  return {
    name: 'pushover',
    async send(notification, signal) {
      const firing = notification.alerts.some((a) => a.status === 'firing');
      const priority = settings.priority !== undefined ? Number(settings.priority) : firing ? 2 : 0;
      const body = {
        token: settings.token,
        user: settings.user_key,
        title: cutChars(title(notification), PUSHOVER_LIMITS.title),
        message: cutChars(plainText(notification, { max: PUSHOVER_LIMITS.message, size: (s) => s.length }), PUSHOVER_LIMITS.message),
        priority,
        ...(priority === 2 ? EMERGENCY : {}),
        ...(settings.sound ? { sound: settings.sound } : {}),
        ...(settings.device ? { device: settings.device } : {}),
      };
      try {
        const response = await postJson(settings.url, body, {}, signal);
        const text = await response.text();
        return response.ok ? pushoverAnswer(text) : httpFailure(response.status, text, response.headers.get('retry-after'));
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}

function pushoverAnswer(text: string): DeliveryResult {
  try {
    const answer: unknown = JSON.parse(text);
    if (fieldOf(answer, 'status') === 1) return { ok: true };
    return { ok: false, retriable: false, error: `pushover: ${JSON.stringify(fieldOf(answer, 'errors') ?? answer).slice(0, 300)}` };
  } catch {
    return { ok: false, retriable: false, error: `pushover: the answer is not JSON: ${text.slice(0, 200)}` };
  }
}
