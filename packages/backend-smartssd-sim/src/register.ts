import { registerBackend } from '@sluice/core';
import { smartSsdSimBackend } from './backend.js';

registerBackend('smartssd-sim', smartSsdSimBackend);
