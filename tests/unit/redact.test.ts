import { describe, expect, it } from 'vitest';
import { redactUrl, urlCredentials } from '../../services/core/config/redact.js';

describe('redactUrl', () => {
  it.each([
    ['user and password', 'redis://alice:S3cretRedisPw@host:6379', 'redis://***@host:6379'],
    ['password only', 'redis://:S3cretRedisPw@host:6379', 'redis://***@host:6379'],
    ['user only (a NATS token)', 'nats://t0ken@nats:4222', 'nats://***@nats:4222'],
    ['no credentials', 'redis://host:6379', 'redis://host:6379'],
    ['no credentials, a database and a query', 'redis://host:6379/2?family=6', 'redis://host:6379/2?family=6'],
    ['an IPv6 host', 'redis://u:pw@[::1]:6379', 'redis://***@[::1]:6379'],
    ['rediss (TLS)', 'rediss://default:pw@cache.example.com:6380/0', 'rediss://***@cache.example.com:6380/0'],
    ['percent-encoded characters', 'redis://us%40er:p%40ss%3Aw%2Frd@host:6379', 'redis://***@host:6379'],
    ['an unencoded @ in the password', 'redis://:p@ss@host:6379', 'redis://***@host:6379'],
    ['an unencoded / in the password (does not parse)', 'redis://:pa/ss@host:6379', 'redis://***@host:6379'],
    ['no scheme', 'user:pw@host:6379', '***@host:6379'],
    ['a string that is no URL', 'not a url at all', 'not a url at all'],
    ['an unparsable one with credentials', 'redis://:pw@host:port-is-no-number', 'redis://***@host:port-is-no-number'],
    ['an empty string', '', ''],
    ['a password in the query too', 'redis://u:pw@host/0?password=x', 'redis://***@host/0?password=***'],
    ['a password in the query only', 'redis://host:6379/0?password=S3cret', 'redis://host:6379/0?password=***'],
    [
      'password, pass, token, auth and secret, any case, among other parameters',
      'redis://host/0?family=6&PASSWORD=a&Pass=b&token=c&auth=d&client_secret=e&db=2',
      'redis://host/0?family=6&PASSWORD=***&Pass=***&token=***&auth=***&client_secret=***&db=2',
    ],
    ['a percent-encoded name', 'nats://host:4222?pass%77ord=S3cret', 'nats://host:4222?pass%77ord=***'],
    ['an api key', 'redis://host?api_key=k3y&apiKey=k3y', 'redis://host?api_key=***&apiKey=***'],
    ['an empty value: nothing to hide', 'redis://host/0?password=&db=1', 'redis://host/0?password=&db=1'],
    ['a name without a value', 'redis://host/0?password', 'redis://host/0?password'],
    ['in the fragment', 'redis://host/0#token=S3cret', 'redis://host/0#token=***'],
    ['after a query, in the fragment', 'redis://host/0?db=1#token=S3cret', 'redis://host/0?db=1#token=***'],
    ['semicolons between parameters', 'redis://host/0?db=1;password=S3cret', 'redis://host/0?db=1;password=***'],
    ['a ? in the user-info password is not a query', 'redis://:pa?ss@host:6379?db=1', 'redis://***@host:6379?db=1'],
    ['an @ in the query password hides from the user info on', 'redis://host/0?password=p@ss', 'redis://***@ss'],
  ])('%s: %s → %s', (_case, url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  it('is idempotent: a shown URL shows the same', () => {
    expect(redactUrl(redactUrl('redis://a:b@host:6379'))).toBe('redis://***@host:6379');
    expect(redactUrl(redactUrl('redis://a:b@host/0?password=c'))).toBe('redis://***@host/0?password=***');
  });
});

describe('urlCredentials', () => {
  it.each([
    ['redis://alice:S3cret@host:6379/2', { url: 'redis://host:6379/2', user: 'alice', password: 'S3cret' }],
    ['redis://:S3cret@host:6379', { url: 'redis://host:6379', user: undefined, password: 'S3cret' }],
    ['nats://t0ken@[::1]:4222', { url: 'nats://[::1]:4222', user: 't0ken', password: undefined }],
    ['rediss://us%40er:p%40ss%3Aw%2Frd@host:6380', { url: 'rediss://host:6380', user: 'us@er', password: 'p@ss:w/rd' }],
    ['redis://:p@ss@host:6379', { url: 'redis://host:6379', user: undefined, password: 'p@ss' }],
    ['redis://:100%@host:6379', { url: 'redis://host:6379', user: undefined, password: '100%' }],
    ['redis://host:6379', { url: 'redis://host:6379', user: undefined, password: undefined }],
    ['redis://:pa/ss@host:6379', { url: 'redis://:pa/ss@host:6379', user: undefined, password: undefined }],
  ])('%s', (url, parts) => {
    expect(urlCredentials(url)).toEqual(parts);
  });
});
