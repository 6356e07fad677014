import type { Transporter } from 'nodemailer';
import { redactSecrets } from '@gpualert/log';
import type { CompiledTemplate } from '../go-template.ts';
import { renderFields } from '../render-fields.ts';
import type { Channel } from './channel.ts';
import { oneLine } from './escape.ts';
import { html, plainText, title } from './format.ts';

/**
 * Email over SMTP through nodemailer: text and HTML, a subject with severity, host and what happened.
 * nodemailer loads at the first email sent: a process that loads the channels and sends no email (the
 * engine checking routes, a notifier without an email receiver) does not hold it (about 15 MB).
 */
export function emailChannel(settings: { smtp_url: string; from: string; to: string }, templates?: Readonly<Record<string, CompiledTemplate>>): Channel {
  let transport: Promise<Transporter> | undefined;
  const transporter = (): Promise<Transporter> =>
    (transport ??= import('nodemailer')
      .then(({ createTransport }) => createTransport(settings.smtp_url))
      .catch((error: unknown) => {
        transport = undefined; // tried again at the next message
        throw error;
      }));
  return {
    name: 'email',
    async send(notification, signal) {
      try {
        // Alertmanager's headers.Subject, html and text templates (email_configs), else gpualert's own message.
        const r = renderFields(templates, notification);
        const own = r?.fields;
        const subject = own?.subject !== undefined ? oneLine(own.subject) : title(notification);
        // A template that fails on this message: gpualert's own text for that part, the error said in the text body.
        const errors = r?.errors.length ? `\n\n${r.errors.join('\n')}` : '';
        const sending = (await transporter()).sendMail({
          from: settings.from,
          to: settings.to,
          subject,
          text: (own?.text ?? plainText(notification)) + errors,
          html: own?.html ?? html(notification),
        });
        // nodemailer takes no signal: on stop the attempt is given up (the outbox keeps it).
        const stopped = new Promise<never>((_, reject) => {
          if (signal?.aborted) reject(new Error('stopped'));
          signal?.addEventListener('abort', () => reject(new Error('stopped')), { once: true });
        });
        await (signal ? Promise.race([sending, stopped]) : sending);
        return { ok: true };
      } catch (error) {
        const code = (error as { responseCode?: number }).responseCode;
        // 4xx SMTP replies are temporary; 5xx are permanent; no reply at all is the network.
        return { ok: false, retriable: code === undefined || code < 500, error: redactSecrets(`smtp: ${(error as Error).message}`) };
      }
    },
  };
}
